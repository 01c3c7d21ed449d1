package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// extraCommands are commands compiled in by build tags (man.go).
var extraCommands []func() *cobra.Command

// subcommand is one command of the tree and the names a run calls it by.
type subcommand struct {
	names []string
	build func(*streams) *cobra.Command
}

// subcommands is the tree below the root, in the order help lists it.
var subcommands = []subcommand{
	{[]string{opSpaceToDepth.use, opSpaceToDepth.alias}, func(s *streams) *cobra.Command { return newOpCmd(s, opSpaceToDepth) }},
	{[]string{opDepthToSpace.use, opDepthToSpace.alias}, func(s *streams) *cobra.Command { return newOpCmd(s, opDepthToSpace) }},
	{[]string{"info"}, newInfoCmd},
	{[]string{"convert"}, newConvertCmd},
	{[]string{"compare"}, newCompareCmd},
	{[]string{"explain"}, newExplainCmd},
	{[]string{"reorder"}, newReorderCmd},
}

// newRootCmd builds the command tree for a run with these arguments:
// only the command the run names when its first argument names one, the
// root alone for a bare --version, every command otherwise (help,
// completion, a mistyped name that wants suggestions). A command and its
// flags cost some 40–60 page faults to build, a fifth of a short run's
// start.
func newRootCmdFor(s *streams, args []string) *cobra.Command {
	completing = len(args) > 0 && strings.HasPrefix(args[0], "__complete") // cobra.ShellCompRequestCmd, ShellCompNoDescRequestCmd
	switch {
	case len(args) == 1 && (args[0] == "--version" || args[0] == "-v"):
		return newRoot(s, nil)
	case len(args) > 0:
		for _, c := range subcommands {
			for _, n := range c.names {
				if args[0] == n {
					root := newRoot(s, []subcommand{c})
					// Nor the completion command cobra adds to a root
					// with subcommands (five commands and their flags):
					// a run naming a command never reaches it.
					root.CompletionOptions.DisableDefaultCmd = true
					return root
				}
			}
		}
	}
	return newRootCmd(s)
}

// newRootCmd builds the whole tree.
func newRootCmd(s *streams) *cobra.Command {
	root := newRoot(s, subcommands)
	// Only a run that builds the whole tree can show the root's help
	// (or write its man page), and only when it does is the table of
	// formats made (it was a tenth of the CPU time of --version).
	longLazily(root, func() string { return rootLong + formatTable() + rootLongEnd })
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	return root
}

// rootLong and rootLongEnd are the root's help text around the table of
// formats.
const (
	rootLong = `depthspace rearranges tensors the way the SpaceToDepth and DepthToSpace
operators do (ONNX, DirectML, TensorFlow, PyTorch pixel_shuffle, OpenVINO),
byte-exact for every dtype, on every core, in files of these formats:
`
	rootLongEnd = `
See 'depthspace convert --help' to change a file's format.`
)

func newRoot(s *streams, subs []subcommand) *cobra.Command {
	root := &cobra.Command{
		Use:   "depthspace",
		Short: "Space-to-depth and depth-to-space on tensor files",
		Example: `  depthspace s2d -b 2 in.npy -o out.npy
  depthspace d2s -b 2 --order crd in.npy -o out.npy
  cat in.npy | depthspace s2d -b 2 > out.npy`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	versionFlag(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%v (see '%s --help')", err, c.CommandPath())
	})
	for _, c := range subs {
		root.AddCommand(c.build(s))
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// versionFlag gives root -v/--version printing "depthspace VERSION".
// cobra would add the flag itself for a root with Version set, but it
// prints "depthspace version VERSION", and changing that takes
// SetVersionTemplate: any cobra template links text/template's
// executor, whose reflect.Value.MethodByName turns off the linker's
// dead-code elimination of methods for the whole program (11.2 MB
// against 9.3 MB, and every run pays for the size at start;
// TestDeadcodeElimination). So the flag is ours, and is answered where
// cobra goes when a root without Run is run: its help.
func versionFlag(root *cobra.Command) {
	fl := root.Flags()
	fl.BoolP("version", "v", false, "version for depthspace")
	// As cobra marks its own: completion stops after it.
	_ = fl.SetAnnotation("version", cobra.FlagSetByCobraAnnotation, []string{"true"})
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		fillLongs()
		if c == root {
			v, _ := fl.GetBool("version")
			h, _ := fl.GetBool("help")
			if v && !h {
				fmt.Fprintf(c.OutOrStdout(), "depthspace %s\n", versionString())
				return
			}
		}
		help(c, args)
	})
}

// longLazily gives cmd its long help text (made by long) when help or a
// man page is shown, not when the command is built: a run reads its
// flags, never its help, and the texts that list the formats cost 1% of
// a short run's time to make.
func longLazily(cmd *cobra.Command, long func() string) {
	lazyLongs = append(lazyLongs, lazyLong{cmd, long})
}

type lazyLong struct {
	cmd  *cobra.Command
	long func() string
}

var lazyLongs []lazyLong

// fillLongs sets the long help of every command built so far.
func fillLongs() {
	for _, l := range lazyLongs {
		l.cmd.Long = l.long()
	}
	lazyLongs = nil
}
