package main

// Formats that live in packages of their own register themselves when
// imported: every list a user sees, detection and the pipeline follow.
import _ "github.com/depthspace/depthspace/internal/format/zarr"
