package pipeline

import (
	"strconv"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// Info describes one tensor input: what `depthspace info` prints, and,
// with --json, exactly this struct marshalled.
type Info struct {
	Path   string `json:"path"`
	Format string `json:"format"` // the format's name (format.Kind)
	// Name is a container member's name (one Info per member), "" too,
	// or an ONNX tensor's name; nil for a tensor without one. Compressed
	// says an npz member is deflated.
	Name       *string `json:"name,omitempty"`
	Compressed bool    `json:"compressed,omitempty"`
	// Version is the version of the header the tensor's data follow in
	// the file ("1.0", "2.0" or "3.0" for npy files and npz members), and
	// Stored that header's format; the JSON key keeps its first name.
	Version   string      `json:"npy_version,omitempty"`
	Stored    format.Kind `json:"-"`
	Shape     []int       `json:"shape"`
	DType     string      `json:"dtype"` // the numpy name: float32, >i4, bfloat16, S8
	Descr     string      `json:"descr"` // the npy descr it has or would have: <f4
	ByteOrder string      `json:"byte_order"`
	Order     string      `json:"order"` // "C" (row-major) or "F" (Fortran, column-major)
	Elements  int         `json:"elements"`
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
	if info := describeHeader(src, block); info != nil {
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

// describeHeader describes a file from its header alone, for a format
// whose data lie in place after a header (format.InPlace with HeadBytes):
// the file's first bytes are read (one pread) and the data's size is
// taken from the file's size, so a file of any size costs the same and
// its data is never read, mapped or paged in. It is nil for anything
// else (another format, a longer header, a malformed one, not a regular
// file), which Describe then loads, so that its errors read exactly as
// for every other command.
func describeHeader(src Source, block ops.Block) *Info {
	if src.Path == "-" || len(src.Members) > 0 || format.ExtensionError(src.Path) != nil {
		return nil
	}
	kind := src.From
	if kind == "" {
		kind = format.KindByExtension(src.Path)
	}
	n := format.HeadBytes()
	var f *format.Format
	if kind != "" {
		if f = format.Lookup(kind); !headerAlone(f) {
			return nil
		}
		n = f.InPlace.HeadBytes
	}
	if n == 0 {
		return nil
	}
	// One read of the file's start (of an object: one HEAD and one
	// ranged GET) holds the header of any ordinary file of the format.
	head, size, err := fileio.Head(src.Path, int64(n))
	if err != nil {
		return nil // Load says why, in its words
	}
	if f == nil {
		if f = format.Lookup(format.Sniff(head)); !headerAlone(f) {
			return nil
		}
	}
	d, err := src.description()
	if err != nil {
		return nil
	}
	p, err := f.InPlace.Parse(head, size, d)
	if err != nil {
		return nil
	}
	return describe(src.Path, &Tensor{Header: p.Header, Kind: f.Kind, Stored: &p}, block)
}

// headerAlone says whether info reads a file of f from its header alone.
func headerAlone(f *format.Format) bool {
	return f != nil && f.InPlace != nil && f.InPlace.HeadBytes > 0
}

func describe(path string, t *Tensor, block ops.Block) *Info {
	info := &Info{
		Path: path, Format: string(t.Kind), Compressed: t.Compressed,
		Shape: append([]int{}, t.Shape...), DType: t.DType.Name(), Descr: t.DType.Descr(),
		ByteOrder: byteOrder(t.DType), Order: "C",
		Elements: t.Elements(), ElementBytes: t.DType.Size, DataBytes: t.DataBytes(),
	}
	if t.member || t.Name != "" {
		info.Name = &t.Name
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
	if d, ok := t.lazy.(format.Described); ok {
		info.FileBytes = d.StoredBytes() // a store's chunks
	}
	if t.Stored != nil {
		if t.Stored.Major != 0 {
			info.Version = strconv.Itoa(t.Stored.Major) + "." + strconv.Itoa(t.Stored.Minor)
			info.Stored = t.Stored.Kind
		}
		h := t.Stored.DataOffset
		info.HeaderBytes = &h
		if t.input == nil { // streamed: the header and the data
			info.FileBytes = h + info.DataBytes
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
