package cli

import (
	"fmt"
	"runtime"

	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
)

// convertFlags are the flags of convert, as the user typed them.
type convertFlags struct {
	formatFlags
	batchFlags
	threads int
}

func newConvertCmd(s *streams) *cobra.Command {
	f := &convertFlags{}
	cmd := &cobra.Command{
		Use:   "convert [flags] INPUT OUTPUT | --out-dir DIR INPUT...",
		Short: "Rewrite tensors in another format: " + formatList(),
		Example: `  # npy to JSON, and back
  depthspace convert in.npy out.json
  depthspace convert out.json back.npy

  # Raw bytes need a description; raw output is the bare element bytes
  depthspace convert --dtype uint8 --shape 16,3,64,64 frames.bin frames.npy
  depthspace convert in.npy in.raw

  # A Fortran-order npy becomes C order
  depthspace convert fortran.npy c_order.npy

  # Print a tensor as JSON
  depthspace convert --to json in.npy -

  # A whole directory of npy files to safetensors, paths kept under out/
  depthspace convert --to safetensors --out-dir out/ data/`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.outDir == "" {
				if err := f.checkNoBatch(cmd); err != nil {
					return err
				}
			} else if err := f.checkMode(cmd, args); err != nil {
				return err
			} else {
				job, err := f.job(s)
				if err != nil {
					return err
				}
				return f.batchFlags.run(*job, args, s)
			}
			if err := exactArgs("INPUT and OUTPUT")(cmd, args); err != nil {
				return err
			}
			opts, err := f.options(args, s)
			if err != nil {
				return err
			}
			_, err = pipeline.Convert(*opts)
			return err
		},
	}
	longLazily(cmd, func() string {
		return `Rewrite a tensor in another format (` + formatList() + `) with the
same dtype, shape and values. The output is always C order: a
Fortran-order input is reordered. Binary outputs hold exactly the
input's element bytes (the dtype is kept, byte order included); text
follows the rules of docs/formats.md. A container (` + containerList() + `)
is converted member by member, names kept.

The output format is --to, else OUTPUT's extension, else the input's
format. OUTPUT is written to a temporary file and renamed into place when
complete; - writes to standard output (binary data is refused when that
is a terminal). INPUT may be - for standard input.

With --out-dir DIR, any number of INPUTs, files or directories, are
converted as a batch, exactly as s2d's --out-dir does (relative paths
kept, each output with the extension of --to's format, --shard,
--skip-existing, --progress and --json): see docs/batch.md.`
	})
	fl := cmd.Flags()
	f.formatFlags.register(fl, "OUTPUT's")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work (in a batch: across and within files)")
	f.batchFlags.register(fl)
	registerCompletions(cmd)
	return cmd
}

// exactArgs wants two arguments and says which when they are not there.
func exactArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("%s needs %s, got %d argument(s) (see '%s --help')", cmd.Name(), what, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// job is the batch's template: the identity plan (ops.NewCopy, as
// pipeline.Convert) with the formats.
func (f *convertFlags) job(s *streams) (*pipeline.Options, error) {
	if f.threads < 1 {
		return nil, fmt.Errorf("--threads %d must be at least 1", f.threads)
	}
	opts := &pipeline.Options{Planner: ops.NewCopy, Threads: f.threads}
	if err := f.formatFlags.apply(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

func (f *convertFlags) options(args []string, s *streams) (*pipeline.Options, error) {
	if f.threads < 1 {
		return nil, fmt.Errorf("--threads %d must be at least 1", f.threads)
	}
	opts := &pipeline.Options{
		Source: pipeline.Source{
			Path: args[0], Stdin: s.in, Stream: true,
		},
		Output:    args[1],
		Threads:   f.threads,
		Stdout:    s.out,
		StdoutTTY: s.stdoutIsTTY(),
	}
	if err := f.formatFlags.apply(opts); err != nil {
		return nil, err
	}
	return opts, nil
}
