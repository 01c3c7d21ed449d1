package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// extraCommands are commands compiled in by build tags (man.go).
var extraCommands []func() *cobra.Command

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
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}
