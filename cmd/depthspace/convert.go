package main

import (
	"fmt"
	"runtime"

	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
)

// convertFlags are the flags of convert, as the user typed them.
type convertFlags struct {
	formatFlags
	threads int
}

func newConvertCmd(s *streams) *cobra.Command {
	f := &convertFlags{}
	cmd := &cobra.Command{
		Use:   "convert [flags] INPUT OUTPUT",
		Short: "Rewrite a tensor in another format: npy, raw or JSON",
		Long: `Rewrite a tensor in another format (npy, raw or JSON) with the same dtype,
shape and values. The output is always C order: a Fortran-order npy input
is reordered. Binary outputs hold exactly the input's element bytes (the
npy descr is kept, byte order included); JSON follows the text rules of
docs/formats.md.

The output format is --to, else OUTPUT's extension (.npy, .json, .raw or
.bin), else the input's format. OUTPUT is written to a temporary file and
renamed into place when complete; - writes to standard output (binary
data is refused when that is a terminal). INPUT may be - for standard
input.`,
		Example: `  # npy to JSON, and back
  depthspace convert in.npy out.json
  depthspace convert out.json back.npy

  # Raw bytes need a description; raw output is the bare element bytes
  depthspace convert --dtype uint8 --shape 16,3,64,64 frames.bin frames.npy
  depthspace convert in.npy in.raw

  # A Fortran-order npy becomes C order
  depthspace convert fortran.npy c_order.npy

  # Print a tensor as JSON
  depthspace convert --to json in.npy -`,
		Args: exactArgs("INPUT and OUTPUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options(args, s)
			if err != nil {
				return err
			}
			_, err = pipeline.Convert(*opts)
			return err
		},
	}
	fl := cmd.Flags()
	f.formatFlags.register(fl, "OUTPUT's")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work")
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
