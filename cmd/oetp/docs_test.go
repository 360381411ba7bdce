package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The documentation stays true: every relative link resolves, every flag an
// oetp command line in the docs names exists on that command, and the
// README's blocks marked runnable run and succeed.

// repoRoot is the repository's top directory, seen from cmd/oetp.
const repoRoot = "../.."

// markdownFiles returns the repository's Markdown files (not testdata).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d Markdown files under %s", len(files), repoRoot)
	}
	return files
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestDocsLinks(t *testing.T) {
	checked := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				checked++
				if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
					t.Errorf("%s:%d: link %q: no such file", f, i+1, m[1])
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d relative links", checked)
	}
}

// docCommandLines returns the oetp command lines in a Markdown text: the lines
// of fenced code blocks and the inline code spans that contain "oetp ",
// with backslash continuations joined.
func docCommandLines(text string) []string {
	var out []string
	fenced := false
	var cont string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			cont = ""
			continue
		}
		if fenced {
			if strings.HasSuffix(line, "\\") {
				cont += strings.TrimSuffix(line, "\\") + " "
				continue
			}
			out = append(out, cont+line)
			cont = ""
			continue
		}
		for _, span := range inlineCode.FindAllStringSubmatch(line, -1) {
			out = append(out, span[1])
		}
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	flagWord   = regexp.MustCompile(`(?:^|[\s\[(=])(--[a-z][a-z0-9-]*)`)
)

// findCommand follows the words after "oetp" down the command tree and
// returns the deepest command they name.
func findCommand(root *cobra.Command, words []string) *cobra.Command {
	cmd := root
	for _, w := range words {
		var next *cobra.Command
		for _, sub := range cmd.Commands() {
			if sub.Name() == w {
				next = sub
			}
		}
		if next == nil {
			break
		}
		cmd = next
	}
	return cmd
}

func hasFlag(cmd *cobra.Command, name string) bool {
	return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil ||
		cmd.PersistentFlags().Lookup(name) != nil || name == "help" || name == "version"
}

var oetpCall = regexp.MustCompile(`(?:^|[\s/$"'(])oetp((?:\s+[a-z][a-z-]*)+)`)

func TestDocsFlags(t *testing.T) {
	var ran bool
	root := newRoot(&ran)
	checked := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range docCommandLines(string(b)) {
			// A line may hold several commands (a pipe, a comment): check
			// each oetp call up to the next shell separator.
			for _, part := range regexp.MustCompile(`[|;#]|&&`).Split(line, -1) {
				m := oetpCall.FindStringSubmatchIndex(part)
				if m == nil {
					continue
				}
				cmd := findCommand(root, strings.Fields(part[m[2]:m[3]]))
				if cmd == root {
					continue
				}
				for _, fm := range flagWord.FindAllStringSubmatch(part[m[1]:], -1) {
					name := strings.TrimPrefix(fm[1], "--")
					checked++
					if !hasFlag(cmd, name) {
						t.Errorf("%s: %q: %s has no flag --%s", f, strings.TrimSpace(part), cmd.CommandPath(), name)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d flags in the docs", checked)
	}
}

// TestREADMERunnable runs the README's code blocks marked runnable (an HTML
// comment "<!-- runnable -->" on the line before the fence): each line is
// an oetp command line (`go run ./cmd/oetp ARGS` or `oetp ARGS`), run in
// this process, which must exit 0. Such blocks need no root and no NIC.
func TestREADMERunnable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	blocks := 0
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "<!-- runnable -->" {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md:%d: <!-- runnable --> is not followed by a code block", i+1)
		}
		blocks++
		for j := i + 2; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			line, _, _ := strings.Cut(lines[j], "#")
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			var args []string
			switch {
			case strings.HasPrefix(line, "go run ./cmd/oetp "):
				args = strings.Fields(strings.TrimPrefix(line, "go run ./cmd/oetp "))
			case strings.HasPrefix(line, "oetp "):
				args = strings.Fields(strings.TrimPrefix(line, "oetp "))
			default:
				t.Fatalf("README.md:%d: a runnable block holds only oetp command lines: %q", j+1, line)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
				t.Errorf("README.md:%d: %q exited %d\n%s%s", j+1, line, code, stdout.String(), stderr.String())
			}
		}
	}
	if blocks == 0 {
		t.Fatal("README.md marks no block runnable")
	}
}
