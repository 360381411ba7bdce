//go:build oetp_man

package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/manpages"
)

func init() { register("man", newManCmd) }

func newManCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "man --dir DIR",
		Short:  "Write the man pages of every command (section 1) into a directory",
		Hidden: true,
		Long: `man writes one troff man page per command (oetp.1, oetp-serve.1,
oetp-rmem-read.1, ...) into --dir, generated from the commands' own help. The
repository keeps them in docs/man ('go generate ./cmd/oetp' writes them there);
packagers install them into man1, e.g. /usr/local/share/man/man1. Only a
build with the oetp_man tag has this command:

  go run -tags oetp_man ./cmd/oetp man --dir DIR`,
		Example: `  oetp man --dir /usr/local/share/man/man1`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return usagef("--dir: %v", err)
			}
			// The whole tree: run built only the man command's branch.
			var ran bool
			return manpages.Write(newRoot(&ran), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory `DIR` to write the pages into")
	if err := cmd.MarkFlagRequired("dir"); err != nil {
		panic(err)
	}
	return cmd
}
