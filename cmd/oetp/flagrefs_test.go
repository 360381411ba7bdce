package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestSuggestedFlagsExist walks the string literals of the command files
// (and of the packages whose messages the commands print) for flags they
// suggest (--name) and checks that each exists: on the command the file is
// named after (hub.go: oetp hub) or one of its subcommands, on a command
// the literal names ("oetp serve ... --peer"), and for the shared files on
// some command of the tree. A message telling the user to "raise --wait"
// on a command without --wait fails here. TestMistakes checks the flags in
// the messages the built binary prints against the command that printed
// them.
func TestSuggestedFlagsExist(t *testing.T) {
	var ran bool
	root := newRoot(&ran)
	all := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { all[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	all["help"], all["version"] = true, true

	// Files that are not one command's, and packages whose messages the
	// commands print: their flags must exist on some command.
	dirs := []string{".", "../../role", "../../rundir", "../../devices", "../../hub", "../../link/afpacket", "../../addrtable", "./internal/bench", "./internal/frames", "./internal/serve", "./internal/cli", "./internal/dmafile", "./internal/regs", "./internal/hubrun", "./internal/session", "../../node", "../../replicate", "../../memspec", "../../conformance"}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v): a package moved? update dirs", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.Base(path), "man") {
				continue // oetp man exists only in a build with the oetp_man tag
			}
			owners := fileCommands(root, dir, path)
			for _, lit := range stringLiterals(t, path) {
				for _, m := range flagToken.FindAllStringSubmatch(lit.text, -1) {
					name := m[1]
					ok := all[name]
					if owners != nil {
						ok = name == "help" || name == "version"
						for _, c := range owners {
							ok = ok || hasFlagBelow(c, name)
						}
						// A command the literal names ("pace it with dma write
						// --rate", "'rmem --retries'").
						for _, c := range namedCommands(root, lit.text) {
							ok = ok || hasFlagBelow(c, name)
						}
					}
					if !ok {
						where := "any oetp command"
						if owners != nil {
							var paths []string
							for _, c := range owners {
								paths = append(paths, c.CommandPath())
							}
							where = strings.Join(paths, " or ")
						}
						t.Errorf("%s:%d suggests --%s, which %s does not have: %q", path, lit.line, name, where, lit.text)
					}
				}
			}
		}
	}
}

// topicFiles are the files of cmd/oetp that hold several commands.
var topicFiles = map[string][]string{
	"frames":   {"encode", "decode", "dump"},
	"oneshot":  {"rmem", "dma", "regs"},
	"longrun":  {"bench", "demo", "conformance"},
	"services": {"serve", "hub"},
}

// fileCommands are the commands a file of cmd/oetp holds: the one it is
// named after (serve.go, serve_watch.go: serve) or a topic file's; nil for
// shared files and other packages.
func fileCommands(root *cobra.Command, dir, path string) []*cobra.Command {
	if dir != "." {
		return nil
	}
	base := strings.TrimSuffix(filepath.Base(path), ".go")
	if base == "devices" {
		// Also the --device support of rmem, dma and regs, and the
		// peer-entries that print serve's --peer arguments.
		return nil
	}
	name, _, _ := strings.Cut(base, "_")
	names, ok := topicFiles[name]
	if !ok {
		names = []string{name}
	}
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if slices.Contains(names, c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// namedCommands are the commands a text names by their first word.
func namedCommands(root *cobra.Command, text string) []*cobra.Command {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r < 'a' || r > 'z' }) {
		words[w] = true
	}
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if words[c.Name()] {
			out = append(out, c)
		}
	}
	return out
}

// hasFlagBelow reports whether c or one of its subcommands has the flag.
func hasFlagBelow(c *cobra.Command, name string) bool {
	if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
		return true
	}
	for _, s := range c.Commands() {
		if hasFlagBelow(s, name) {
			return true
		}
	}
	return false
}

type literal struct {
	text string
	line int
}

// stringLiterals returns the string literals of a Go file, unquoted.
func stringLiterals(t *testing.T, path string) []literal {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if s, err := strconv.Unquote(bl.Value); err == nil {
				out = append(out, literal{s, fset.Position(bl.Pos()).Line})
			}
		}
		return true
	})
	return out
}

// flagToken is a flag as messages suggest it: --name.
var flagToken = regexp.MustCompile(`(?:^|[\s(,'"\x60])--([a-z][a-z0-9-]*)`)

// namedCommand is the command a message line names ("oetp serve",
// "oetp dma write"), nil if none.
func namedCommand(root *cobra.Command, line string) *cobra.Command {
	i := strings.Index(line, "oetp ")
	if i < 0 {
		return nil
	}
	var words []string
	for _, w := range strings.Fields(line[i+5:]) {
		w = strings.Trim(w, ":,;()")
		if w == "" || strings.HasPrefix(w, "-") || len(words) == 2 {
			break
		}
		words = append(words, w)
	}
	for n := len(words); n > 0; n-- {
		if c, rest, err := root.Find(words[:n]); err == nil && len(rest) == 0 && c != root {
			return c
		}
	}
	return nil
}
