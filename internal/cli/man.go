//go:build man

// The man page generator is built only with -tags man (.goreleaser.yaml
// runs it so): cobra's doc package brings a markdown renderer and a YAML
// library whose package initialisation alone took 2.5 ms of every start
// (GODEBUG=inittrace=1), a quarter of the start-up budget.

package cli

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { extraCommands = append(extraCommands, newManCmd) }

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
			fillLongs()
			return doc.GenManTree(root, &doc.GenManHeader{
				Title: "DEPTHSPACE", Section: "1", Source: "depthspace " + versionString(), Manual: "depthspace manual",
			}, args[0])
		},
	}
}
