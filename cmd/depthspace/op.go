package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
)

type opKind struct {
	op      ops.Op
	use     string
	alias   string
	short   string
	example string
}

var opSpaceToDepth = opKind{
	op: ops.SpaceToDepth, use: "space-to-depth", alias: "s2d",
	short: "Move blocks of spatial data into the channel axis",
	example: `  # ONNX SpaceToDepth (DCR, NCHW): [1,1,4,6] -> [1,4,2,3]
  depthspace s2d -b 2 in.npy -o out.npy

  # PyTorch pixel_unshuffle (CRD, NCHW)
  depthspace s2d -b 2 --order crd in.npy -o out.npy

  # TensorFlow tf.nn.space_to_depth (NHWC)
  depthspace s2d -b 2 --layout nhwc in.npy -o out.npy

  # Rectangular block (2 rows x 3 columns); rank 3 (1-D) and rank 5 (3-D) work too
  depthspace s2d -b 2x3 vol.npy -o out.npy

  # The seed example as JSON text, through a pipe
  echo '[[[[0,18,1,19,2,20],[36,54,37,55,38,56],[3,21,4,22,5,23],[39,57,40,58,41,59]],
         [[9,27,10,28,11,29],[45,63,46,64,47,65],[12,30,13,31,14,32],[48,66,49,67,50,68]]]]' |
    depthspace s2d -b 2 --from json --dtype uint32 - -o -

  # Raw bytes need a description
  depthspace s2d -b 4 --from raw --dtype uint8 --shape 16,3,2048,2048 frames.bin -o out.npy

Equivalent operators:
  ONNX SpaceToDepth                      --order dcr --layout nchw (the defaults)
  DirectML SPACE_TO_DEPTH1 DEPTH_COLUMN_ROW / COLUMN_ROW_DEPTH   --order dcr / crd
  TensorFlow space_to_depth              --layout nhwc
  PyTorch pixel_unshuffle                --order crd
  OpenVINO SpaceToDepth blocks_first / depth_first               --order dcr / crd`,
}

var opDepthToSpace = opKind{
	op: ops.DepthToSpace, use: "depth-to-space", alias: "d2s",
	short: "Move channel data into spatial blocks",
	example: `  # ONNX DepthToSpace mode=DCR (the default)
  depthspace d2s -b 2 in.npy -o out.npy

  # ONNX DepthToSpace mode=CRD, PyTorch pixel_shuffle
  depthspace d2s -b 2 --order crd in.npy -o out.npy

  # TensorFlow tf.nn.depth_to_space (NHWC)
  depthspace d2s -b 2 --layout nhwc in.npy -o out.npy

  # A Unix filter
  cat in.npy | depthspace d2s -b 2 > out.npy

Equivalent operators:
  ONNX DepthToSpace mode=DCR / mode=CRD  --order dcr / crd
  DirectML DEPTH_TO_SPACE1 DEPTH_COLUMN_ROW / COLUMN_ROW_DEPTH   --order dcr / crd
  TensorFlow depth_to_space              --layout nhwc
  PyTorch pixel_shuffle                  --order crd
  OpenVINO DepthToSpace blocks_first / depth_first               --order dcr / crd`,
}

// opFlags are the flags of s2d and d2s, as the user typed them.
type opFlags struct {
	block, order, layout string
	output               string
	from, to             string
	dtype, shape         string
	threads              int
}

func newOpCmd(s *streams, k opKind) *cobra.Command {
	f := &opFlags{}
	cmd := &cobra.Command{
		Use:     k.use + " -b BLOCK [flags] [INPUT]",
		Aliases: []string{k.alias},
		Short:   k.short,
		Long: k.short + `.

INPUT is an .npy, raw or JSON tensor file, or - for standard input (the
default when no INPUT is given). The result goes to -o PATH, written to a
temporary file and renamed into place when complete, or to standard output.

Index formula (K spatial axes, blocks b1..bK, B = b1*...*bK, kk the
row-major block offset):
  out[n, ch, o1..oK] = in[n, c, o1*b1+k1, ..., oK*bK+kK]   (space-to-depth)
  ch = kk*C + c (dcr)    ch = c*B + kk (crd)
depth-to-space is the exact inverse with the same --order.`,
		Example: k.example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(k.op, args, s)
			if err != nil {
				return err
			}
			_, err = pipeline.Transform(*opts)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.block, "block", "b", "", "block size: one edge for every spatial axis (2) or one per axis (2x3)")
	fl.StringVar(&f.order, "order", "dcr", "channel order: dcr (depth-column-row, blocks-first) or crd (column-row-depth, depth-first)")
	fl.StringVar(&f.layout, "layout", "nchw", "tensor layout: nchw (channels-first) or nhwc (channels-last)")
	fl.StringVarP(&f.output, "output", "o", "-", "output file, or - for standard output")
	fl.StringVar(&f.from, "from", "", "input format: npy, raw or json (default: by extension, then by content)")
	fl.StringVar(&f.to, "to", "", "output format: npy, raw or json (default: by -o's extension, else the input's format)")
	fl.StringVar(&f.dtype, "dtype", "", "element type of raw input or a bare JSON array (float32, uint8, f4, >i2, bfloat16, FLOAT16, ...)")
	fl.StringVar(&f.shape, "shape", "", "shape of raw input, as D1,D2,...")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work")
	_ = cmd.MarkFlagRequired("block")
	registerCompletions(cmd)
	return cmd
}

func (f *opFlags) options(op ops.Op, args []string, s *streams) (*pipeline.Options, error) {
	block, err := ops.ParseBlock(f.block)
	if err != nil {
		return nil, err
	}
	order, err := ops.ParseOrder(f.order)
	if err != nil {
		return nil, err
	}
	layout, err := ops.ParseLayout(f.layout)
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
		Request: ops.Request{Op: op, Order: order, Layout: layout, Block: block},
		Source: pipeline.Source{
			Path: input, DType: f.dtype, Shape: f.shape, Stdin: s.in, Stream: true,
		},
		Output:    f.output,
		Threads:   f.threads,
		Stdout:    s.out,
		StdoutTTY: s.stdoutIsTTY(),
	}
	if f.from != "" {
		if opts.From, err = format.ParseKind(f.from); err != nil {
			return nil, err
		}
	}
	if f.to != "" {
		if opts.To, err = format.ParseKind(f.to); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// registerCompletions offers the fixed choices of each flag and tensor
// files for arguments.
func registerCompletions(cmd *cobra.Command) {
	fixed := func(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("order", fixed("dcr\tdepth-column-row (ONNX DCR, TensorFlow)", "crd\tcolumn-row-depth (ONNX CRD, PyTorch)"))
	_ = cmd.RegisterFlagCompletionFunc("layout", fixed("nchw\tchannels first", "nhwc\tchannels last"))
	_ = cmd.RegisterFlagCompletionFunc("from", fixed("npy", "raw", "json"))
	_ = cmd.RegisterFlagCompletionFunc("to", fixed("npy", "raw", "json"))
	_ = cmd.RegisterFlagCompletionFunc("block", fixed("2", "3", "4", "2x2", "2x3"))
	_ = cmd.RegisterFlagCompletionFunc("dtype", fixed(strings.Fields("float32 float16 bfloat16 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool complex64 complex128")...))
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"npy", "json", "raw", "bin"}, cobra.ShellCompDirectiveFilterFileExt
	}
}
