package cli

// Every format registers itself from its own package; the programs get
// them all here.
import _ "github.com/depthspace/depthspace/internal/format/all"
