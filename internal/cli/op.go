package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/depthspace/depthspace/internal/batch"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

  # A camera RAW mosaic [H,W] to 4 planes [H/2,W/2,4] R,G,G,B whatever the Bayer pattern
  depthspace s2d -b 2 --layout hw --block-order bggr raw.npy -o planes.npy

  # Learning-to-See-in-the-Dark pack_raw (R,G,B,G of an RGGB mosaic)
  depthspace s2d -b 2 --layout hw --block-order 0,1,3,2 raw.npy -o packed.npy

  # YOLOv5 Focus: cat(x[...,::2,::2], x[...,1::2,::2], x[...,::2,1::2], x[...,1::2,1::2]), 1)
  depthspace s2d -b 2 --block-order col-major x.npy -o focus.npy

  # Sizes that are not a multiple of the block: pad (numpy.pad modes) or crop
  depthspace s2d -b 2 --layout hw --pad reflect frame.npy -o packed.npy
  depthspace s2d -b 2 --layout hw --crop raw.npy -o packed.npy

  # The seed example as JSON text, through a pipe
  echo '[[[[0,18,1,19,2,20],[36,54,37,55,38,56],[3,21,4,22,5,23],[39,57,40,58,41,59]],
         [[9,27,10,28,11,29],[45,63,46,64,47,65],[12,30,13,31,14,32],[48,66,49,67,50,68]]]]' |
    depthspace s2d -b 2 --from json --dtype uint32 - -o -

  # Raw bytes need a description
  depthspace s2d -b 4 --from raw --dtype uint8 --shape 16,3,2048,2048 frames.bin -o out.npy

  # A batch: walk data/ for tensor files, keep relative paths under out/
  depthspace s2d -b 2 --out-dir out/ data/
  depthspace s2d -b 2 --out-dir out/ a.npy b.npy c.json --to npy   # out/a.npy out/b.npy out/c.npy

  # Machine 3 of 16 does its share; resume after an interruption
  depthspace s2d -b 2 --out-dir out/ --shard 3/16 data/
  depthspace s2d -b 2 --out-dir out/ --skip-existing data/

  # Progress lines in a log; one JSON record per file for scripts
  depthspace s2d -b 2 --out-dir out/ --progress always data/ 2>progress.log
  depthspace s2d -b 2 --out-dir out/ --json data/ | jq -r 'select(.status=="failed") | .input'

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

  # 4 planes [H/2,W/2,4] (R,G,G,B) back to a BGGR mosaic [H,W]
  depthspace d2s -b 2 --layout hw --block-order bggr planes.npy -o raw.npy

  # The inverse of a padded s2d: cut the output back to the original size
  depthspace d2s -b 2 --layout hw --crop-to 3000,4000 result.npy -o out.npy

  # A batch: files and directory trees, relative paths kept under out/
  depthspace d2s -b 2 --order crd --out-dir out/ a.npy b.npy c.json
  depthspace d2s -b 2 --out-dir out/ data/

  # Machine 3 of 16 does its share; resume after an interruption
  depthspace d2s -b 2 --out-dir out/ --shard 3/16 data/
  depthspace d2s -b 2 --out-dir out/ --skip-existing data/

  # Progress lines in a log; one JSON record per file for scripts
  depthspace d2s -b 2 --out-dir out/ --progress always data/ 2>progress.log
  depthspace d2s -b 2 --out-dir out/ --json data/ > records.jsonl

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
	blockOrder           string
	crop                 bool
	pad, cropTo          string
	output               string
	threads              int
	formatFlags
	batchFlags
	stderr io.Writer // where notes go (what --crop dropped)
}

// batchFlags are the flags of a batch (--out-dir: many inputs, one output
// directory), shared by every command that writes results.
type batchFlags struct {
	outDir       string
	shard        string
	skipExisting bool
	progress     string
	json         bool
}

func (b *batchFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&b.outDir, "out-dir", "", "batch: write each INPUT's result under `DIR`, relative paths kept (created if missing)")
	fl.StringVar(&b.shard, "shard", "", "batch: do only shard `K/N` of the sorted file list (0 <= K < N), for N processes or machines; auto: K and N from the job array's variables (Slurm, AWS Batch, Google Cloud Batch, Grid Engine); auto/N: K from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX")
	fl.BoolVar(&b.skipExisting, "skip-existing", false, "batch: skip files whose output exists (outputs are atomic, so complete): resume")
	fl.StringVar(&b.progress, "progress", "auto", "batch: progress on stderr: auto (a bar on a terminal), always (plain lines elsewhere), never")
	fl.BoolVar(&b.json, "json", false, "batch: one JSON record per file on stdout, then a summary record")
}

// batchOnly are the flags that mean something only with --out-dir.
var batchOnly = []string{"shard", "skip-existing", "progress", "json"}

func newOpCmd(s *streams, k opKind) *cobra.Command {
	f := &opFlags{stderr: s.err}
	cmd := &cobra.Command{
		Use:     k.use + " -b BLOCK [flags] [INPUT | --out-dir DIR INPUT...]",
		Aliases: []string{k.alias},
		Short:   k.short,
		Example: k.example,
		Args:    cobra.ArbitraryArgs,
	}
	longLazily(cmd, func() string {
		return k.short + `.

INPUT is a tensor file (` + formatList() + `: see
'depthspace --help'), or - for standard input (the default when no INPUT
is given). The result goes to -o PATH, written to a
temporary file and renamed into place when complete, or to standard output.

With --out-dir DIR, any number of INPUTs, files or directories, make a
batch. Directories are walked recursively (symbolic links followed, loops
reported) for tensor files (` + tensorExts() + `), in byte-wise
sorted order of their paths relative to the directory; each result goes
to DIR/REL (a file argument: DIR/NAME), with the extension of --to's
format if --to is given. A file that fails is reported and the batch goes
on; a summary ends the run, and the exit status is 2 if any file failed.
See docs/batch.md.

Index formula (K spatial axes, blocks b1..bK, B = b1*...*bK, kk the
row-major block offset):

    out[n, ch, o1..oK] = in[n, c, o1*b1+k1, ..., oK*bK+kK]   (space-to-depth)
    ch = kk*C + c (dcr)    ch = c*B + kk (crd)

depth-to-space is the exact inverse with the same --order.`
	})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := f.checkMode(cmd, args); err != nil {
			return err
		}
		if f.outDir != "" {
			return f.runBatch(k.op, args, s)
		}
		opts, err := f.options(k.op, args, s)
		if err != nil {
			return err
		}
		_, err = pipeline.Transform(*opts)
		return err
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.block, "block", "b", "", "block size: one edge for every spatial axis (2) or one per axis (2x3)")
	fl.StringVar(&f.order, "order", "dcr", "channel order: dcr (depth-column-row, blocks-first) or crd (column-row-depth, depth-first)")
	fl.StringVar(&f.layout, "layout", "nchw", "tensor layout: nchw (channels-first), nhwc (channels-last), chw or hwc (no batch axis), hw (a bare mosaic or gray image; its depth side is hwc)")
	fl.StringVar(&f.blockOrder, "block-order", "row-major", "which block offset each channel group holds: row-major, col-major (YOLOv5 Focus), a Bayer pattern rggb|bggr|grbg|gbrg (groups R,G,G,B), cfa (the pattern a camera raw input holds), or a permutation p0,p1,... (SID pack_raw: 0,1,3,2)")
	if k.op == ops.SpaceToDepth {
		fl.BoolVar(&f.crop, "crop", false, "drop the trailing rows/columns that do not fill a block (numpy x[..., :H//b*b, :W//b*b]); stderr says how many")
		fl.StringVar(&f.pad, "pad", "", "extend each spatial axis at its end to a multiple of the block: zero, edge or reflect (numpy.pad constant, edge, reflect)")
	} else {
		fl.StringVar(&f.cropTo, "crop-to", "", "cut the output's spatial axes to D1,...,DK: the inverse of a padded s2d")
	}
	fl.StringVarP(&f.output, "output", "o", "-", "output file, or - for standard output")
	f.formatFlags.register(fl, "-o's")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work (in a batch: across and within files)")
	f.batchFlags.register(fl)
	_ = cmd.MarkFlagRequired("block")
	registerCompletions(cmd)
	return cmd
}

// checkMode refuses flag combinations that mix the one-input and the
// batch forms.
func (f *batchFlags) checkMode(cmd *cobra.Command, args []string) error {
	if f.outDir == "" {
		if err := f.checkNoBatch(cmd); err != nil {
			return err
		}
		if len(args) > 1 {
			return fmt.Errorf("%d inputs need --out-dir DIR (-o names the output of one input)", len(args))
		}
		return nil
	}
	if cmd.Flags().Changed("output") {
		return errors.New("-o and --out-dir cannot be used together: -o is the output of one input, --out-dir the directory of a batch")
	}
	if len(args) == 0 {
		return errors.New("--out-dir needs at least one INPUT file or directory")
	}
	return nil
}

// checkNoBatch refuses the batch-only flags without --out-dir.
func (f *batchFlags) checkNoBatch(cmd *cobra.Command) error {
	if cmd.Flags().Changed("out-dir") {
		return errors.New("--out-dir needs a directory name")
	}
	for _, name := range batchOnly {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s is for batches: give --out-dir DIR", name)
		}
	}
	return nil
}

// runBatch runs the --out-dir form: every file of every INPUT, the
// failures reported as they come, the summary at the end.
func (f *opFlags) runBatch(op ops.Op, args []string, s *streams) error {
	job, err := f.job(op)
	if err != nil {
		return err
	}
	return f.batchFlags.run(*job, args, s)
}

// run runs job over every file of every INPUT.
func (f *batchFlags) run(job pipeline.Options, args []string, s *streams) error {
	var err error
	opts := batch.Options{
		Inputs: args, OutDir: f.outDir, Job: job, Threads: job.Threads,
		SkipExisting: f.skipExisting, Stderr: s.err,
	}
	switch {
	case batch.ShardAutoValue(f.shard):
		if opts.Shard, opts.ShardFrom, err = batch.ShardAuto(f.shard, os.Getenv); err != nil {
			return err
		}
	case f.shard != "":
		if opts.Shard, err = batch.ParseShard(f.shard); err != nil {
			return err
		}
	}
	if opts.Progress, err = batch.ParseProgress(f.progress, s.stderrIsTTY()); err != nil {
		return err
	}
	if f.json {
		opts.JSON = s.out
		fileio.PipeErrorsAreErrors() // records that cannot be written: exit 2
	}
	sum, err := batch.Run(opts)
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		// The summary is the last line either way; main prints this one
		// as "depthspace: …" and exits 2.
		return errors.New(sum.String())
	}
	fmt.Fprintln(s.err, "depthspace: "+sum.String())
	return nil
}

// job is what every run shares: the operation and the formats.
func (f *opFlags) job(op ops.Op) (*pipeline.Options, error) {
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
	blockOrder, err := ops.ParseBlockOrder(f.blockOrder)
	if err != nil {
		return nil, err
	}
	pad, err := ops.ParsePadMode(f.pad)
	if err != nil {
		return nil, err
	}
	var cropTo []int
	if f.cropTo != "" {
		if cropTo, err = ops.ParseSizes(f.cropTo); err != nil {
			return nil, err
		}
	}
	if f.threads < 1 {
		return nil, fmt.Errorf("--threads %d must be at least 1", f.threads)
	}
	req := ops.Request{Op: op, Order: order, Layout: layout, Block: block, BlockOrder: blockOrder,
		Crop: f.crop, Pad: pad, CropTo: cropTo}
	if err := req.Check(); err != nil {
		return nil, err
	}
	opts := &pipeline.Options{
		Request: req,
		Note:    func(n string) { fmt.Fprintln(f.stderr, "depthspace: "+n) },
		Source:  pipeline.Source{},
		Threads: f.threads,
	}
	if err := f.formatFlags.apply(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// options is the one-input form: INPUT (or standard input) to -o.
func (f *opFlags) options(op ops.Op, args []string, s *streams) (*pipeline.Options, error) {
	opts, err := f.job(op)
	if err != nil {
		return nil, err
	}
	input := "-"
	if len(args) == 1 {
		input = args[0]
	} else if s.stdinIsTTY() {
		return nil, errors.New("no input: give a file, or - to read standard input")
	}
	opts.Path, opts.Stdin, opts.Stream = input, s.in, true
	opts.Output, opts.Stdout, opts.StdoutTTY = f.output, s.out, s.stdoutIsTTY()
	return opts, nil
}
