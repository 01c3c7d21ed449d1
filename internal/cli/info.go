package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/depthspace/depthspace/internal/compare"
	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/depthspace/depthspace/internal/walk"
	"github.com/spf13/cobra"
)

// infoFlags are the flags of info, as the user typed them.
type infoFlags struct {
	json  bool
	block string
	inputFlags
}

func newInfoCmd(s *streams) *cobra.Command {
	f := &infoFlags{}
	cmd := &cobra.Command{
		Use:   "info [flags] INPUT|DIR...",
		Short: "Describe tensor files: shape, dtype, order and sizes",
		Long: `Describe tensor files: shape, dtype (numpy name and ` + plainKind() + ` descr), byte
order, C or Fortran order, ` + plainKind() + ` version, header, data and file bytes, and
element count. Only headers are read: a file of any size is described at
once (an input that must be decoded, a text one, is read whole).

With -b BLOCK, also say for space-to-depth and depth-to-space, in both
orders (dcr, crd) and both layouts (nchw, nhwc), whether the operation is
possible on the input and the shape of its result, or why not.

A directory is walked as a batch walks it (recursively, symbolic links
followed, tensor files by extension, sorted by relative path) and each
tensor under it is described on one line: path, format, dtype, shape,
order (C or F) and data bytes. A directory or s3:// prefix holding no
tensor file is an error.

A container is described member by member. --json prints one JSON
array with one object per tensor (per input, or per container member), in the
order given; an input that cannot be read is an object with "path" and
"error".
A bad input is reported on standard error and the others are still
described; the exit status is then 2.`,
		Example: `  # Shape, dtype, order and sizes
  depthspace info model_input.npy

  # Several inputs at once, for a script; --dtype and --shape describe raw data
  depthspace info --json a.npy b.raw --dtype f4 --shape 1,8,2,3

  # Every tensor under a tree, one line each (or one JSON object each)
  depthspace info data/
  depthspace info --json data/ | jq -r '.[] | select(.dtype != "float32") | .path'

  # Which operations are possible with block 2, and their result shapes
  depthspace info -b 2 x.npy`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("info needs at least one INPUT (- for standard input) (see '%s --help')", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInfo(f, args, s)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print a JSON array, one object per input (per container member, per file of a DIR)")
	fl.StringVarP(&f.block, "block", "b", "", "also tell which operations are possible with this block (2 or 2x3)")
	f.inputFlags.register(fl, "describe only the members whose names match")
	withoutBatch(fl)
	registerCompletions(cmd)
	return cmd
}

// infoError is the JSON entry of an input that could not be described.
type infoError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func runInfo(f *infoFlags, args []string, s *streams) error {
	var block ops.Block
	if f.block != "" {
		b, err := ops.ParseBlock(f.block)
		if err != nil {
			return err
		}
		block = b
	}
	var from pipeline.Source
	if err := f.inputFlags.source(&from); err != nil {
		return err
	}
	stdin := 0
	for _, a := range args {
		if a == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return fmt.Errorf("standard input (-) is named %d times", stdin)
	}
	var entries []any
	var failed error
	fail := func(path string, err error) {
		// Report it and go on; run prints the last failure itself.
		if failed != nil {
			fmt.Fprintln(s.err, "depthspace: "+oneLine(failed.Error()))
		}
		failed = shownError{err} // a name with a newline or an ESC: still one line
		msg := err
		var pe *pipeline.PathError
		if errors.As(err, &pe) {
			path, msg = pe.Path, pe.Err
		}
		entries = append(entries, infoError{Path: path, Error: oneLine(msg.Error())})
	}
	printed := false
	for _, path := range args {
		if path != "-" && isDir(path) {
			// A tree: one line per tensor file (per npz member).
			files, err := walk.Files(path)
			if err == nil && len(files) == 0 {
				// A misspelt s3:// prefix lists no key at all: nothing
				// described is an error, not an empty success.
				err = &pipeline.PathError{Path: path, Err: fmt.Errorf("holds no tensor file (none named %s)", tensorExts())}
			}
			if err != nil {
				fail(path, err)
				continue
			}
			if printed && !f.json && len(files) > 0 {
				fmt.Fprintln(s.out)
			}
			tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			for _, file := range files {
				if file.Err != nil {
					fail(file.Path, file.Err)
					continue
				}
				infos, err := pipeline.Describe(pipeline.Source{Path: file.Path, From: from.From, DType: from.DType, Shape: from.Shape, Members: from.Members}, block)
				if err != nil {
					fail(file.Path, err)
					continue
				}
				for _, info := range infos {
					entries = append(entries, info)
					if !f.json {
						writeInfoLine(tw, info)
					}
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			printed = printed || len(files) > 0
			continue
		}
		infos, err := pipeline.Describe(pipeline.Source{Path: path, From: from.From, DType: from.DType, Shape: from.Shape, Members: from.Members, Stdin: s.in}, block)
		if err != nil {
			fail(path, err)
			continue
		}
		for _, info := range infos {
			entries = append(entries, info)
			if !f.json {
				if printed {
					fmt.Fprintln(s.out)
				}
				printed = true
				if err := writeInfo(s.out, info); err != nil {
					return err
				}
			}
		}
	}
	if f.json {
		if err := writeJSON(s.out, entries); err != nil {
			return err
		}
	}
	return failed
}

// isDir says whether path names a directory (following symbolic links).
func isDir(path string) bool {
	return walk.IsDir(path) // or an s3:// prefix
}

// writeInfoLine prints one tensor of a tree as a line of columns: path
// (and npz member), format, dtype, shape, order, data bytes.
func writeInfoLine(tw io.Writer, in *pipeline.Info) {
	name := in.Path
	if in.Name != nil {
		name += ":" + *in.Name
	}
	// Escaped (%q) when it holds a tab, a newline or any other control:
	// the row stays one row and its columns stay aligned.
	name = compare.Name(name)
	kind := in.Format
	if in.Version != "" && !format.IsContainer(format.Kind(in.Format)) {
		kind += " " + in.Version
	}
	if in.Compressed {
		kind += " deflated"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d bytes\n", name, kind, in.DType, format.ShapeString(in.Shape), in.Order, in.DataBytes)
}

// writeJSON prints v as one line of JSON, as encoding/json marshals it
// (without escaping <, > and &: "<f4" stays readable).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeInfo prints one description for people:
//
//	x.npy
//	  format        npy 1.0
//	  shape         1,8,4,6
//	  ...
func writeInfo(w io.Writer, in *pipeline.Info) error {
	var b strings.Builder
	name := compare.Name(in.Path)
	if in.Path == "-" {
		name = "stdin"
	}
	if in.Name != nil {
		name += fmt.Sprintf(" (%s %q)", map[bool]string{true: "member", false: "tensor"}[format.IsContainer(format.Kind(in.Format))], *in.Name)
	}
	b.WriteString(name + "\n")
	row := func(k, v string) { fmt.Fprintf(&b, "  %-14s %s\n", k, v) }
	kind := in.Format
	switch {
	case in.Compressed: // a deflated member (npz)
		kind += " member, deflated, " + string(in.Stored) + " " + in.Version
	case in.Version != "" && format.IsContainer(format.Kind(in.Format)):
		kind += " member, " + string(in.Stored) + " " + in.Version // a file inside (npz, Polygraphy's base64)
	case in.Version != "":
		kind += " " + in.Version
	}
	row("format", kind)
	shape := format.ShapeString(in.Shape)
	if len(in.Shape) == 0 {
		shape = "() (a scalar)"
	}
	row("shape", shape)
	row("dtype", in.DType+" ("+in.Descr+")")
	row("byte order", map[string]string{"little": "little-endian", "big": "big-endian", "none": "none (single bytes)"}[in.ByteOrder])
	row("order", map[string]string{"C": "C (row-major)", "F": "Fortran (column-major)"}[in.Order])
	row("elements", fmt.Sprint(in.Elements))
	row("element bytes", fmt.Sprint(in.ElementBytes))
	row("data bytes", fmt.Sprint(in.DataBytes))
	if in.HeaderBytes != nil {
		row("header bytes", fmt.Sprint(*in.HeaderBytes))
	}
	row("file bytes", fmt.Sprint(in.FileBytes))
	for _, kv := range in.Details { // the format's own (a DNG's CFA pattern, levels)
		row(strings.ReplaceAll(kv[0], "_", " "), kv[1])
	}
	if in.Ops != nil {
		fmt.Fprintf(&b, "  with block %s:\n", in.Block)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, op := range in.Ops {
			result := "-> " + format.ShapeString(op.Shape)
			if !op.Possible {
				result = "impossible: " + op.Reason
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", op.Op, op.Order, op.Layout, result)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}
