package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "depthspace",
		Short: "Space-to-depth and depth-to-space on tensor files",
		Long: `depthspace rearranges tensors the way the SpaceToDepth and DepthToSpace
operators do (ONNX, DirectML, TensorFlow, PyTorch pixel_shuffle, OpenVINO),
on .npy, raw and JSON files, byte-exact for every dtype, on every core.`,
		Example: `  depthspace s2d -b 2 in.npy -o out.npy
  depthspace d2s -b 2 --order crd in.npy -o out.npy
  cat in.npy | depthspace s2d -b 2 > out.npy`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetVersionTemplate("depthspace {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newOpCmd(s, opSpaceToDepth), newOpCmd(s, opDepthToSpace),
		newInfoCmd(s), newConvertCmd(s), newCompareCmd(s))
	root.AddCommand(newExplainCmd(s), newReorderCmd(s))
	root.AddCommand(newManCmd())
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// newManCmd is the hidden "depthspace man DIR": one man page per command,
// written by cobra's doc generator for the release archives
// (.goreleaser.yaml). Set SOURCE_DATE_EPOCH for a reproducible date.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o777); err != nil {
				return err
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			return doc.GenManTree(root, &doc.GenManHeader{
				Title: "DEPTHSPACE", Section: "1", Source: "depthspace " + versionString(), Manual: "depthspace manual",
			}, args[0])
		},
	}
}
