package cli

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every list of formats a user sees (flag help, completion, the walk's
// extensions) is read from the format registry here, so that a format
// registered in internal/format appears everywhere at once.

// inputFlags are how inputs are read: --from, --dtype, --shape and
// --member, the same on every command that reads tensors (s2d, d2s,
// reorder, convert, info, compare).
type inputFlags struct {
	from, dtype, shape string
	members            []string
}

// register adds the input flags; member says what --member does with the
// members it picks (and with the others).
func (f *inputFlags) register(fl *pflag.FlagSet, member string) {
	fl.StringVar(&f.from, "from", "", "input format: "+format.Either(format.Names(nil))+" (default: by extension, then by content)")
	fl.StringVar(&f.dtype, "dtype", "", "element type of an input that does not say it: "+bareKind()+" data, a bare array of numbers (float32, uint8, f4, >i2, bfloat16, FLOAT16, ...)")
	fl.StringVar(&f.shape, "shape", "", "shape of "+bareKind()+" input, as D1,D2,...")
	fl.StringArrayVar(&f.members, "member", nil, "in a container input ("+containerList()+"), "+member+" (a glob, repeatable)")
	objectFlags(fl) // objectflags.go: --no-sign-request, --io-jobs
}

// source fills how a job's inputs are read.
func (f *inputFlags) source(src *pipeline.Source) error {
	if err := checkObjectFlags(); err != nil {
		return err
	}
	src.DType, src.Shape = f.dtype, f.shape
	for _, g := range f.members {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("--member %q is not a valid glob", g)
		}
	}
	src.Members = f.members
	if f.from != "" {
		k, err := format.ParseKind(f.from)
		if err != nil {
			return err
		}
		src.From = k
	}
	return nil
}

// formatFlags are the input flags and --to: how to read an input and
// what to write, for the commands that write tensors.
type formatFlags struct {
	inputFlags
	storeFlags
	to      string
	renames []string
}

// memberWork is --member's help on the commands that write tensors.
const memberWork = "work on the members whose names match; the others are copied unchanged"

// register adds the flags; output names what the output format follows
// by default ("-o's", "OUTPUT's").
func (f *formatFlags) register(fl *pflag.FlagSet, output string) {
	f.inputFlags.register(fl, memberWork)
	f.storeFlags.register(fl)
	fl.StringVar(&f.to, "to", "", "output format: "+format.Either(format.Names(format.Writable))+" (default: by "+output+" extension, else the input's format)")
	fl.StringArrayVar(&f.renames, "rename-member", nil, `FROM=TO: the member FROM is named TO in the output (repeatable); either side may be a Go-quoted string, "a\x00b", as error lines print names`)
}

// apply sets the formats, dtype, shape and members of a job.
func (f *formatFlags) apply(opts *pipeline.Options) error {
	if err := f.inputFlags.source(&opts.Source); err != nil {
		return err
	}
	if err := f.storeFlags.apply(opts); err != nil {
		return err
	}
	if f.to != "" {
		k, err := format.ParseKindOf(f.to, format.Writable)
		if err != nil {
			return err
		}
		if !format.Writable(format.Lookup(k)) {
			return fmt.Errorf("--to %s: %w", k, format.ReadOnlyError(format.Lookup(k)))
		}
		opts.To = k
	}
	for _, r := range f.renames {
		from, to, err := parseRename(r)
		if err != nil {
			return err
		}
		if opts.Rename == nil {
			opts.Rename = make(map[string]string)
		}
		if _, dup := opts.Rename[from]; dup {
			return fmt.Errorf("--rename-member %q: %q is renamed twice", r, from)
		}
		opts.Rename[from] = to
	}
	return nil
}

// parseRename reads a --rename-member value, FROM=TO. A side that starts
// with a double quote is a Go-quoted string (strconv.Unquote), so that a
// name holding "=", a NUL, a control character or bytes that are not
// UTF-8 can be given exactly as an error line printed it; a plain FROM
// ends at the first "=", a plain TO is the rest.
func parseRename(v string) (from, to string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("--rename-member %q: %s; want FROM=TO, either side plain or Go-quoted (\"a\\x00b\"=ab)", v, why)
	}
	from, rest, ok := renameSide(v, "=")
	if !ok {
		return bad("FROM is not a complete quoted string")
	}
	if !strings.HasPrefix(rest, "=") {
		return bad("no = after FROM")
	}
	to, rest, ok = renameSide(rest[1:], "")
	if !ok || rest != "" {
		return bad("TO is not one complete quoted string")
	}
	return from, to, nil
}

// renameSide is the name at the start of s, quoted or plain (up to end,
// or all of s when end is ""), and what follows it.
func renameSide(s, end string) (name, rest string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", false
		}
		name, _ = strconv.Unquote(q)
		return name, s[len(q):], true
	}
	if end == "" {
		return s, "", true
	}
	if i := strings.Index(s, end); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", true
}

// formatList is the registered formats for prose: "npy, raw, json, ...
// or dng".
func formatList() string { return format.Either(format.Names(nil)) }

// bareKind names the format of input with no header (--dtype and
// --shape describe it).
func bareKind() string {
	if f := format.BareFormat(); f != nil {
		return string(f.Kind)
	}
	return "headerless"
}

// plainKind names the format info's descr and version are of: the one a
// tensor is written in when its own format cannot be.
func plainKind() string {
	if f := format.Plain(); f != nil {
		return string(f.Kind)
	}
	return "the tensor's"
}

// imageKind names the format of compare's difference images.
func imageKind() string {
	if f := format.ImageFormat(); f != nil {
		return string(f.Kind)
	}
	return "image"
}

// containerList is the registered containers for prose: "npz,
// safetensors, tar, polygraphy".
func containerList() string { return strings.Join(format.Names(format.IsContainerFormat), ", ") }

// formatTable is one line per registered format, for the root's help:
// its name, its extensions and what it is.
func formatTable() string {
	var b strings.Builder
	for _, f := range format.All() {
		fmt.Fprintf(&b, "  %-12s %-18s %s\n", f.Kind, strings.Join(f.Exts, " "), f.Doc)
	}
	return b.String()
}

// tensorExts lists the extensions a directory walk picks up, as help
// text: ".npy .raw .bin .json ...".
func tensorExts() string {
	var e []string
	for _, f := range format.All() {
		for _, x := range f.Exts {
			if !slices.Contains(e, x) { // .json is JSON's and Polygraphy's
				e = append(e, x)
			}
		}
	}
	return strings.Join(e, " ")
}

// formatChoices are the completions of --from (keep nil) or --to.
func formatChoices(keep func(*format.Format) bool) []string {
	var c []string
	for _, f := range format.All() {
		if keep == nil || keep(f) {
			c = append(c, string(f.Kind)+"\t"+f.Doc)
		}
	}
	return c
}

// completing: this run asks for completions (cobra's hidden __complete
// commands, which the shell scripts of `completion` run). Only then are
// the completions registered: a dozen closures and lists per command,
// 1% of a short run's time (perf) for nothing otherwise. newRootCmdFor
// sets it.
var completing bool

// registerCompletions offers the fixed choices of each flag and tensor
// files for arguments.
func registerCompletions(cmd *cobra.Command) {
	if !completing {
		return
	}
	fixed := func(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("order", fixed("dcr\tdepth-column-row (ONNX DCR, TensorFlow)", "crd\tcolumn-row-depth (ONNX CRD, PyTorch)"))
	_ = cmd.RegisterFlagCompletionFunc("layout", fixed("nchw\tchannels first", "nhwc\tchannels last", "chw\tno batch axis, channels first",
		"hwc\tno batch axis, channels last", "hw\ta bare mosaic or gray image"))
	_ = cmd.RegisterFlagCompletionFunc("block-order", fixed("row-major\tthe default", "col-major\tfirst spatial axis fastest (YOLOv5 Focus)",
		"rggb\tBayer RGGB: groups R,G,G,B", "bggr\tBayer BGGR: groups R,G,G,B", "grbg\tBayer GRBG: groups R,G,G,B", "gbrg\tBayer GBRG: groups R,G,G,B",
		"cfa\tthe Bayer pattern read from the file (camera raw): groups R,G,G,B", "0,1,3,2\tSID pack_raw: R,G,B,G of RGGB"))
	_ = cmd.RegisterFlagCompletionFunc("from", fixed(formatChoices(nil)...))
	_ = cmd.RegisterFlagCompletionFunc("to", fixed(formatChoices(format.Writable)...))
	_ = cmd.RegisterFlagCompletionFunc("block", fixed("2", "3", "4", "2x2", "2x3"))
	_ = cmd.RegisterFlagCompletionFunc("dtype", fixed(strings.Fields("float32 float16 bfloat16 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool complex64 complex128")...))
	_ = cmd.RegisterFlagCompletionFunc("progress", fixed("auto\ta bar when stderr is a terminal", "always\ta bar, or plain lines when stderr is not a terminal", "never\tonly the summary"))
	_ = cmd.RegisterFlagCompletionFunc("shard", fixed("auto\tK and N from the job array (Slurm, AWS Batch, Google Cloud Batch, Grid Engine)")) // K/N: nothing to offer, and not a file
	_ = cmd.RegisterFlagCompletionFunc("pad", fixed("zero\tnumpy.pad constant", "edge\tnumpy.pad edge", "reflect\tnumpy.pad reflect"))
	_ = cmd.RegisterFlagCompletionFunc("zarr-codec", fixed(format.StoreCodecs()...))
	_ = cmd.RegisterFlagCompletionFunc("compare-func", fixed("simple\tatol/rtol, element-wise or a statistic", "indices\ttop-k indices (--index-tolerance)",
		"l2\tthe L2 norm of B-A (--l2-tolerance)", "cosine-similarity\tA.B/|A||B| (--cosine-similarity-threshold)", "psnr\t(--psnr-tolerance)", "snr\t(--snr-tolerance)"))
	_ = cmd.RegisterFlagCompletionFunc("check-error-stat", fixed("elemwise\tevery element", "max", "mean", "median", "quantile\t--error-quantile Q"))
	_ = cmd.RegisterFlagCompletionFunc("out-dir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	var exts []string
	for _, f := range format.All() {
		for _, e := range f.Exts {
			if e = strings.TrimPrefix(e, "."); !slices.Contains(exts, e) {
				exts = append(exts, e)
			}
		}
	}
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return exts, cobra.ShellCompDirectiveFilterFileExt
	}
}
