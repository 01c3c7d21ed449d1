// Package all registers every format: the programs import it for its side
// effect, and a new format is one package and one line here.
package all

import (
	_ "github.com/depthspace/depthspace/internal/format/dng"
	_ "github.com/depthspace/depthspace/internal/format/json"
	_ "github.com/depthspace/depthspace/internal/format/npy"
	_ "github.com/depthspace/depthspace/internal/format/npz"
	_ "github.com/depthspace/depthspace/internal/format/onnx"
	_ "github.com/depthspace/depthspace/internal/format/png"
	_ "github.com/depthspace/depthspace/internal/format/polygraphy"
	_ "github.com/depthspace/depthspace/internal/format/raw"
	_ "github.com/depthspace/depthspace/internal/format/safetensors"
	_ "github.com/depthspace/depthspace/internal/format/tar"
	_ "github.com/depthspace/depthspace/internal/format/zarr"
)
