package cli

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
)

// reorderFlags are the flags of `depthspace reorder`, as typed.
type reorderFlags struct {
	fromOrder, toOrder           string
	fromLayout, toLayout         string
	fromBlockOrder, toBlockOrder string
	block                        string
	output                       string
	threads                      int
	formatFlags
	batchFlags
}

func newReorderCmd(s *streams) *cobra.Command {
	f := &reorderFlags{}
	cmd := &cobra.Command{
		Use:   "reorder [--from-order O --to-order O -b BLOCK] [--from-block-order P --to-block-order P -b BLOCK] [--from-layout L --to-layout L] [flags] [INPUT | --out-dir DIR INPUT...]",
		Short: "Repair depth-side data in the other channel order (DCR/CRD) or layout (NCHW/NHWC)",
		Long: `Reorder converts depth-side data (the output of space-to-depth, the input
of depth-to-space) from one channel order to the other, and any tensor from
one layout to the other. It is what an exporter that silently used the
other order needs:

  DCR -> CRD   channel kk*C + c  becomes  c*B + kk   (B = block product)
  CRD -> DCR   channel c*B + kk  becomes  kk*C + c
  NCHW <-> NHWC   the channel axis moves last / second
  --from-block-order P --to-block-order Q   the channel groups permuted:
               the group holding block offset P[j] moves to where Q holds it

All can be combined in one pass. It runs on the same engine as s2d/d2s:
same speed, same formats (` + formatList() + `), same output flags.
A container is reordered member by member and keeps its member names.`,
		Example: `  # An exporter wrote CRD where the model expects DCR (block 2)
  depthspace reorder --from-order crd --to-order dcr -b 2 wrong.npy -o fixed.npy

  # Channels-last to channels-first
  depthspace reorder --from-layout nhwc --to-layout nchw x.npy -o y.npy

  # Both at once, on an ONNX test-data tensor
  depthspace reorder --from-order dcr --to-order crd -b 2 --from-layout nhwc --to-layout nchw input_0.pb -o fixed.pb

  # Camera planes packed R,G,B,G (SID) to R,G,G,B
  depthspace reorder --from-block-order 0,1,3,2 --to-block-order rggb -b 2 --from-layout hwc --to-layout hwc packed.npy -o planes.npy

  # A whole tree, as s2d/d2s batches do
  depthspace reorder --from-order crd --to-order dcr -b 2 --out-dir fixed/ exported/`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkMode(cmd, args); err != nil {
				return err
			}
			if f.outDir != "" {
				// A batch: the job is the one-input options without the
				// input and output, which the batch fills per file.
				job, err := f.options(nil, &streams{in: nil, out: s.out, err: s.err})
				if err != nil {
					return err
				}
				job.Path, job.Stdin, job.Stream, job.Output, job.Stdout = "", nil, false, "", nil
				return f.batchFlags.run(*job, args, s)
			}
			opts, err := f.options(args, s)
			if err != nil {
				return err
			}
			_, err = pipeline.Transform(*opts)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.fromOrder, "from-order", "", "channel order of the input: dcr or crd")
	fl.StringVar(&f.toOrder, "to-order", "", "channel order of the output: dcr or crd")
	fl.StringVar(&f.fromBlockOrder, "from-block-order", "", "block order of the input: row-major, col-major, rggb|bggr|grbg|gbrg or p0,p1,...")
	fl.StringVar(&f.toBlockOrder, "to-block-order", "", "block order of the output")
	fl.StringVarP(&f.block, "block", "b", "", "block size the channels were made with (needed to change the order): 2 or 2x3")
	fl.StringVar(&f.fromLayout, "from-layout", "", "layout of the input: nchw or nhwc (chw or hwc without a batch axis)")
	fl.StringVar(&f.toLayout, "to-layout", "", "layout of the output: nchw or nhwc")
	fl.StringVarP(&f.output, "output", "o", "-", "output file, or - for standard output")
	f.formatFlags.register(fl, "-o's")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work (in a batch: across and within files)")
	f.batchFlags.register(fl)
	registerCompletions(cmd)
	orders := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"dcr", "crd"}, cobra.ShellCompDirectiveNoFileComp
	}
	layouts := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"nchw", "nhwc"}, cobra.ShellCompDirectiveNoFileComp
	}
	_ = cmd.RegisterFlagCompletionFunc("from-order", orders)
	_ = cmd.RegisterFlagCompletionFunc("to-order", orders)
	_ = cmd.RegisterFlagCompletionFunc("from-layout", layouts)
	_ = cmd.RegisterFlagCompletionFunc("to-layout", layouts)
	return cmd
}

// request reads the order and layout flags: each pair is given whole or
// not at all, and at least one pair is given.
func (f *reorderFlags) request() (ops.ReorderRequest, error) {
	var r ops.ReorderRequest
	if (f.fromOrder == "") != (f.toOrder == "") {
		return r, errors.New("--from-order and --to-order go together: give both")
	}
	if (f.fromLayout == "") != (f.toLayout == "") {
		return r, errors.New("--from-layout and --to-layout go together: give both")
	}
	if (f.fromBlockOrder == "") != (f.toBlockOrder == "") {
		return r, errors.New("--from-block-order and --to-block-order go together: give both")
	}
	if f.fromOrder == "" && f.fromLayout == "" && f.fromBlockOrder == "" {
		return r, errors.New("nothing to reorder: give --from-order/--to-order or --from-block-order/--to-block-order (with -b), or --from-layout/--to-layout")
	}
	var err error
	if f.fromBlockOrder != "" {
		if r.FromBlockOrder, err = ops.ParseBlockOrder(f.fromBlockOrder); err != nil {
			return r, err
		}
		if r.ToBlockOrder, err = ops.ParseBlockOrder(f.toBlockOrder); err != nil {
			return r, err
		}
	}
	if f.fromOrder != "" {
		if r.FromOrder, err = ops.ParseOrder(f.fromOrder); err != nil {
			return r, err
		}
		if r.ToOrder, err = ops.ParseOrder(f.toOrder); err != nil {
			return r, err
		}
	}
	if f.fromLayout != "" {
		if r.FromLayout, err = ops.ParseLayout(f.fromLayout); err != nil {
			return r, err
		}
		if r.ToLayout, err = ops.ParseLayout(f.toLayout); err != nil {
			return r, err
		}
	}
	if f.block != "" {
		if r.Block, err = ops.ParseBlock(f.block); err != nil {
			return r, err
		}
	} else if r.ChangesOrder() {
		if r.FromOrder != r.ToOrder {
			return r, fmt.Errorf("--from-order %s --to-order %s needs -b BLOCK: the block the channels were made with", r.FromOrder, r.ToOrder)
		}
		return r, fmt.Errorf("--from-block-order %s --to-block-order %s needs -b BLOCK: the block the channels were made with", r.FromBlockOrder, r.ToBlockOrder)
	}
	return r, nil
}

func (f *reorderFlags) options(args []string, s *streams) (*pipeline.Options, error) {
	r, err := f.request()
	if err != nil {
		return nil, err
	}
	if f.threads < 1 {
		return nil, fmt.Errorf("--threads %d must be at least 1", f.threads)
	}
	input := "-"
	if len(args) == 1 {
		input = args[0]
	} else if s.stdinIsTTY() {
		return nil, errors.New("no input: give a file, or - to read standard input")
	}
	opts := &pipeline.Options{
		Source: pipeline.Source{
			Path: input, Stdin: s.in, Stream: true,
		},
		Output:    f.output,
		Threads:   f.threads,
		Stdout:    s.out,
		StdoutTTY: s.stdoutIsTTY(),
		Planner: func(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
			return ops.NewReorder(r, shape, elemSize, fortran)
		},
	}
	if err := f.formatFlags.apply(opts); err != nil {
		return nil, err
	}
	return opts, nil
}
