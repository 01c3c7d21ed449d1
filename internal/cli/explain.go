package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/depthspace/depthspace/internal/explain"
	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/spf13/cobra"
)

// explainOptions are the flags of `depthspace explain`, with the output.
type explainOptions struct {
	op                   string
	block, order, layout string
	blockOrder           string
	shape                string
	json                 bool
	out                  io.Writer
}

func newExplainCmd(s *streams) *cobra.Command {
	o := &explainOptions{out: s.out}
	cmd := &cobra.Command{
		Use:   "explain [--json] s2d|d2s -b BLOCK [--order O] [--layout L] --shape D1,D2,...",
		Short: "Show what an operation does: shapes, formula, numpy/einops recipe, framework calls",
		Long: `Explain space-to-depth or depth-to-space for one input shape: the output
shape, the index formula with these numbers, the reshape -> transpose ->
reshape recipe in numpy and einops spelling, and the same operation in ONNX,
DirectML, TensorFlow, PyTorch and OpenVINO, or why a framework has no single
operator for it. Nothing is read or written: only the shape matters.

The numbers come from the plan the operators run, so the recipe printed is
exactly what 'depthspace s2d' / 'd2s' do to the bytes.`,
		Example: `  # ONNX DepthToSpace mode=CRD, the seed example
  depthspace explain d2s -b 2 --order crd --shape 1,8,2,3

  # TensorFlow-style NHWC with a 2x3 block, for a script
  depthspace explain --json s2d -b 2x3 --layout nhwc --shape 1,6,9,4

  # Learning-to-See-in-the-Dark's pack_raw: the np.concatenate it is
  depthspace explain s2d -b 2 --layout hw --block-order 0,1,3,2 --shape 2848,4256

  # YOLOv5's Focus layer
  depthspace explain s2d -b 2 --block-order col-major --shape 1,3,640,640`,
		Args: cobra.ExactArgs(1),
		ValidArgs: []string{"s2d\tspace-to-depth", "d2s\tdepth-to-space",
			"space-to-depth", "depth-to-space"},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.op = args[0]
			return explainRun(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.block, "block", "b", "", "block size: one edge for every spatial axis (2) or one per axis (2x3)")
	fl.StringVar(&o.order, "order", "dcr", "channel order: dcr (depth-column-row, blocks-first) or crd (column-row-depth, depth-first)")
	fl.StringVar(&o.layout, "layout", "nchw", "tensor layout: nchw (channels-first), nhwc (channels-last), chw or hwc (no batch axis), hw (a bare mosaic or gray image)")
	fl.StringVar(&o.blockOrder, "block-order", "row-major", "which block offset each channel group holds: row-major, col-major, rggb|bggr|grbg|gbrg, or p0,p1,...")
	fl.StringVar(&o.shape, "shape", "", "input shape, as D1,D2,...")
	fl.BoolVar(&o.json, "json", false, "print a JSON object instead of text")
	_ = cmd.MarkFlagRequired("block")
	_ = cmd.MarkFlagRequired("shape")
	return cmd
}

// explainRun plans the request and prints the explanation. A shape the
// operators refuse fails with their words, after "--shape D1,D2,…:" where
// the operators name their input file.
func explainRun(o *explainOptions) error {
	var op ops.Op
	switch strings.ToLower(o.op) {
	case "s2d", "space-to-depth":
		op = ops.SpaceToDepth
	case "d2s", "depth-to-space":
		op = ops.DepthToSpace
	default:
		return fmt.Errorf("unknown operation %q (want s2d, d2s, space-to-depth or depth-to-space)", o.op)
	}
	block, err := ops.ParseBlock(o.block)
	if err != nil {
		return err
	}
	order, err := ops.ParseOrder(o.order)
	if err != nil {
		return err
	}
	layout, err := ops.ParseLayout(o.layout)
	if err != nil {
		return err
	}
	blockOrder, err := ops.ParseBlockOrder(o.blockOrder)
	if err != nil {
		return err
	}
	shape, err := format.ParseShape(o.shape)
	if err != nil {
		return err
	}
	e, err := explain.New(ops.Request{Op: op, Order: order, Layout: layout, Block: block, BlockOrder: blockOrder}, shape)
	if err != nil {
		return fmt.Errorf("--shape %s: %w", format.ShapeString(shape), err)
	}
	if o.json {
		return e.WriteJSON(o.out)
	}
	return e.WriteText(o.out)
}
