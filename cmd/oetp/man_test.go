package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestManPagesUpToDate generates the man pages and compares them with
// docs/man: a command or flag changed without `go generate ./cmd/oetp`
// fails here.
func TestManPagesUpToDate(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "", "man", "--dir", dir); code != 0 {
		t.Fatalf("oetp man: exit %d, %s", code, errOut)
	}
	list := func(d string) []string {
		paths, _ := filepath.Glob(filepath.Join(d, "*.1"))
		var names []string
		for _, p := range paths {
			names = append(names, filepath.Base(p))
		}
		return names
	}
	got, want := list(dir), list(filepath.Join("..", "..", "docs", "man"))
	const fix = "docs/man is out of date: run `go generate ./cmd/oetp` and commit docs/man"
	if !slices.Equal(got, want) {
		t.Fatalf("%s\ngenerated %v\ncommitted %v", fix, got, want)
	}
	for _, name := range got {
		g, _ := os.ReadFile(filepath.Join(dir, name))
		w, _ := os.ReadFile(filepath.Join("..", "..", "docs", "man", name))
		if string(g) != string(w) {
			t.Errorf("%s: %s differs", fix, name)
		}
	}
	for _, name := range []string{"oetp.1", "oetp-serve.1", "oetp-rmem-read.1", "oetp-dma-write.1", "oetp-dump.1", "oetp-version.1"} {
		if !slices.Contains(got, name) {
			t.Errorf("no man page %s among %v", name, got)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "oetp-dump.1"))
	if !strings.Contains(string(page), "--iface") || !strings.Contains(string(page), ".TH \"OETP\" \"1\"") {
		t.Errorf("oetp-dump.1 lacks --iface or its header:\n%.600s", page)
	}
}
