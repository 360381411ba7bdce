package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

//go:generate go run . man --dir ../../docs/man

func init() { register(newManCmd) }

// manDate is the date in the man pages' footer, fixed so that generating
// them again changes nothing unless a command did. Bump it with a release.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func newManCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "man --dir DIR",
		Short:  "Write the man pages of every command (section 1) into a directory",
		Hidden: true,
		Long: `man writes one troff man page per command (oetp.1, oetp-serve.1,
oetp-rmem-read.1, ...) into --dir, generated from the commands' own help. The
repository keeps them in docs/man ('go generate ./cmd/oetp' writes them there);
packagers install them into man1, e.g. /usr/local/share/man/man1.`,
		Example: `  oetp man --dir /usr/local/share/man/man1`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return usagef("--dir: %v", err)
			}
			return writeManPages(cmd.Root(), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory `DIR` to write the pages into")
	if err := cmd.MarkFlagRequired("dir"); err != nil {
		panic(err)
	}
	return cmd
}

// writeManPages writes the pages of root's command tree into dir, first
// removing the oetp*.1 pages there, so that a command removed loses its
// page.
func writeManPages(root *cobra.Command, dir string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "oetp*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	root.DisableAutoGenTag = true
	hdr := &doc.GenManHeader{Title: "OETP", Section: "1", Date: &manDate, Source: "oetp", Manual: "oetp manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
