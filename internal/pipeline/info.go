package pipeline

import (
	"strconv"

	"github.com/depthspace/depthspace/internal/format"
	npyfmt "github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// Info describes one tensor input: what `depthspace info` prints, and,
// with --json, exactly this struct marshalled.
type Info struct {
	Path   string `json:"path"`
	Format string `json:"format"` // npy, raw, json, npz, onnx or safetensors
	// Name is an npz member's name (one Info per member) or an ONNX
	// tensor's name; Compressed says an npz member is deflated.
	Name       string `json:"name,omitempty"`
	Compressed bool   `json:"compressed,omitempty"`
	NpyVersion string `json:"npy_version,omitempty"` // "1.0", "2.0" or "3.0"; npy and npz members
	Shape      []int  `json:"shape"`
	DType      string `json:"dtype"` // the numpy name: float32, >i4, bfloat16, S8
	Descr      string `json:"descr"` // the npy descr it has or would have: <f4
	ByteOrder  string `json:"byte_order"`
	Order      string `json:"order"` // "C" (row-major) or "F" (Fortran, column-major)
	Elements   int    `json:"elements"`
	// ElementBytes is the size of one element; DataBytes of all of them.
	ElementBytes int   `json:"element_bytes"`
	DataBytes    int64 `json:"data_bytes"`
	// HeaderBytes precede the data: the npy preamble (of the member, in
	// an npz), 0 for raw; absent for JSON and ONNX, whose data is not
	// laid out that way.
	HeaderBytes *int64 `json:"header_bytes,omitempty"`
	// FileBytes is the size of the input as read.
	FileBytes int64 `json:"file_bytes"`
	// Block and Ops are there when a block was asked about (-b).
	Block string   `json:"block,omitempty"`
	Ops   []OpInfo `json:"ops,omitempty"`
	// Details is what the format says of the file beyond the tensor (a
	// DNG's CFA pattern, levels, ActiveArea: details.go).
	Details Details `json:"details,omitempty"`
}

// OpInfo says whether one operation is possible on the input with the
// block asked about, and the result's shape, or why not.
type OpInfo struct {
	Op       string `json:"op"`     // space-to-depth or depth-to-space
	Order    string `json:"order"`  // dcr or crd
	Layout   string `json:"layout"` // nchw or nhwc
	Possible bool   `json:"possible"`
	Shape    []int  `json:"shape,omitempty"`  // the result's shape, when possible
	Reason   string `json:"reason,omitempty"` // why not, as the operation itself would say
}

// Describe loads one input and describes it: one Info, or one per member
// of an npz archive. With a block, it also plans every operation, order
// and layout on each. Only headers are read: the data of an npy, raw or
// stored npz file is mapped and its size checked, never touched (JSON and
// ONNX inputs are decoded, once; deflated npz members are inflated one at
// a time to check them, and not kept).
func Describe(src Source, block ops.Block) ([]*Info, error) {
	if info, ok, err := describeNpyHeader(src, block); ok {
		if err != nil {
			return nil, pathErr(src.Path, err)
		}
		return []*Info{info}, nil
	}
	src.Deferred = true // deflated npz members: one at a time, none kept
	ts, err := LoadAll(src)
	if err != nil {
		return nil, err
	}
	if ts, err = Picked(src.Path, ts, src.Members); err != nil {
		return nil, err
	}
	defer closeAll(ts)
	for _, t := range ts {
		// A corrupt member is a malformed input (exit 2), as a stored
		// one's bad CRC-32 is: inflated to check, in bounded memory.
		if err := t.Verify(); err != nil {
			return nil, err
		}
	}
	out := make([]*Info, len(ts))
	for i, t := range ts {
		out[i] = describe(src.Path, t, block)
	}
	return out, nil
}

// npyHeadBytes is how much of an npy file info reads: numpy pads headers
// to 64 bytes and ours of 1 MiB or more to 4096.
const npyHeadBytes = 16 << 10

// describeNpyHeader describes an npy file from its header alone: the
// first 16 KiB are read (one pread) and the data's size is
// taken from the file's size, so a file of any size costs the same and
// its data is never read, mapped or paged in. ok is false for anything
// that is not a regular file in npy format, which Describe then loads.
func describeNpyHeader(src Source, block ops.Block) (info *Info, ok bool, err error) {
	if src.Path == "-" || len(src.Members) > 0 || (src.From != "" && src.From != npyfmt.KindNpy) || format.ExtensionError(src.Path) != nil {
		return nil, false, nil
	}
	kind := src.From
	if kind == "" {
		kind = format.KindByExtension(src.Path)
	}
	if kind != "" && kind != npyfmt.KindNpy {
		return nil, false, nil
	}
	// One read of the file's start (of an object: one HEAD and one
	// ranged GET) holds the header of any ordinary npy file; anything
	// else (a longer header, a malformed one, not a regular file) is left
	// to Load, so that its errors read exactly as for every other command.
	head, size, err := fileio.Head(src.Path, npyHeadBytes)
	if err != nil {
		return nil, false, nil // Load says why, in its words
	}
	npy, err := npyfmt.ParseNpy(head)
	if err != nil || (kind == "" && format.Sniff(head) != npyfmt.KindNpy) {
		return nil, false, nil
	}
	var want *format.DType
	if src.DType != "" {
		dt, err := format.ParseDType(src.DType)
		if err != nil {
			return nil, true, err
		}
		want = &dt
	}
	var shape []int
	if src.Shape != "" {
		if shape, err = format.ParseShape(src.Shape); err != nil {
			return nil, true, err
		}
	}
	if err := checkNpy(&npy, size, want, shape); err != nil {
		return nil, true, err
	}
	return describe(src.Path, &Tensor{Header: npy.Header, Kind: npyfmt.KindNpy, Npy: &npy}, block), true, nil
}

func describe(path string, t *Tensor, block ops.Block) *Info {
	info := &Info{
		Path: path, Format: string(t.Kind), Name: t.Name, Compressed: t.Compressed,
		Shape: append([]int{}, t.Shape...), DType: t.DType.Name(), Descr: t.DType.Descr(),
		ByteOrder: byteOrder(t.DType), Order: "C",
		Elements: t.Elements(), ElementBytes: t.DType.Size, DataBytes: t.DataBytes(),
	}
	if t.Fortran {
		info.Order = "F"
	}
	if f := format.Lookup(t.Kind); f != nil && f.DTypeName != nil {
		info.Descr, _ = f.DTypeName(t.DType) // the file's own name for it
	}
	if t.input != nil {
		info.FileBytes = int64(len(t.input.Data))
	}
	switch {
	case t.Npy != nil:
		info.NpyVersion = strconv.Itoa(t.Npy.Major) + "." + strconv.Itoa(t.Npy.Minor)
		h := t.Npy.DataOffset
		info.HeaderBytes = &h
		if t.input == nil { // streamed: the header and the data
			info.FileBytes = h + info.DataBytes
		}
	case t.Kind == raw.KindRaw:
		var zero int64
		info.HeaderBytes = &zero
		if t.input == nil {
			info.FileBytes = info.DataBytes
		}
	}
	info.Details = details(t)
	if block != nil {
		info.Block = block.String()
		info.Ops = Possibilities(block, t.Shape, t.DType.Size)
	}
	return info
}

// Possibilities plans space-to-depth and depth-to-space, in both orders
// and both layouts, with block on a tensor of the given shape.
func Possibilities(block ops.Block, shape []int, elemSize int) []OpInfo {
	var out []OpInfo
	for _, op := range []ops.Op{ops.SpaceToDepth, ops.DepthToSpace} {
		for _, layout := range []ops.Layout{ops.NCHW, ops.NHWC} {
			for _, order := range []ops.Order{ops.DCR, ops.CRD} {
				oi := OpInfo{Op: op.String(), Order: order.String(), Layout: layout.String()}
				plan, err := ops.NewPlan(ops.Request{Op: op, Order: order, Layout: layout, Block: block}, shape, max(elemSize, 1), false)
				if err != nil {
					oi.Reason = err.Error()
				} else {
					oi.Possible, oi.Shape = true, plan.Out
				}
				out = append(out, oi)
			}
		}
	}
	return out
}

func byteOrder(d format.DType) string {
	switch {
	case d.Order == '>':
		return "big"
	case d.Order == '<' && d.Size > 1 && d.Kind != 'S' && d.Kind != 'V' || d.BFloat16:
		return "little"
	}
	return "none"
}
