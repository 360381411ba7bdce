package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openenoc/oetp/cmd/oetp/internal/manpages"
)

// TestManPagesUpToDate generates the man pages and compares them with
// docs/man: a command or flag changed without `go generate ./cmd/oetp`
// fails here. The generator itself (the hidden `man` command of an oetp_man
// build) is TestManCommand's.
func TestManPagesUpToDate(t *testing.T) {
	dir := t.TempDir()
	var ran bool
	if err := manpages.Write(newRoot(&ran), dir); err != nil {
		t.Fatal(err)
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

// TestManCommand runs the generator as `go generate` does: `go run -tags
// oetp_man . man --dir DIR`, and checks that the shipped build has no man
// command (nor cobra/doc linked in).
func TestManCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oetp twice")
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "run", "-tags", "oetp_man", ".", "man", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run -tags oetp_man . man: %v\n%s", err, out)
	}
	for _, name := range []string{"oetp.1", "oetp-rmem-read.1"} {
		g, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, _ := os.ReadFile(filepath.Join("..", "..", "docs", "man", name))
		if string(g) != string(w) {
			t.Errorf("%s from the oetp_man build differs from docs/man", name)
		}
	}
	if _, errOut, code := runCLI(t, "", "man", "--dir", dir); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("shipped build: oetp man: exit %d, %s", code, errOut)
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"github.com/spf13/cobra/doc", "testing"} {
		if slices.Contains(strings.Fields(string(deps)), pkg) {
			t.Errorf("the shipped oetp links %s", pkg)
		}
	}
}
