// Package manpages writes the troff man pages (section 1) of oetp's command
// tree. It lives outside package main so that the shipped binary does not
// link cobra/doc (and its Markdown and YAML packages, whose initialisation
// every `oetp` start would pay): the generator is `go generate ./cmd/oetp`,
// which builds oetp with the oetp_man tag, and the test that keeps docs/man
// current calls Write directly.
package manpages

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Date is the date in the pages' footer, fixed so that generating them
// again changes nothing unless a command did. Bump it with a release.
var Date = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// Write writes the pages of root's command tree into dir, first removing
// the oetp*.1 pages there, so that a command removed loses its page.
func Write(root *cobra.Command, dir string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "oetp*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	// The commands cobra adds when it executes (help, completion) have
	// pages too, whether or not root has run.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true
	date := Date
	hdr := &doc.GenManHeader{Title: "OETP", Section: "1", Date: &date, Source: "oetp", Manual: "oetp manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
