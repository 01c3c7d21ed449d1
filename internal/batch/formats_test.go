package batch

// The programs register every format (internal/cli); this package's
// tests read and write them all the same.
import _ "github.com/depthspace/depthspace/internal/format/all"
