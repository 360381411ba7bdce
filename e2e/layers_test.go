package e2e

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/openenoc/oetp/"

// floors are the layers of the repository, lowest first (CONTRIBUTING.md
// draws them). The non-test code of a package imports packages of its own
// floor or below, never above: the floors run one way. A name ending in
// "/..." covers the packages under it. Every package must be on a floor.
var floors = []struct {
	name string
	pkgs []string
}{
	{"leaf helpers", []string{"internal/num", "internal/oserr", "internal/ratelog", "internal/rtt", "internal/tomlin", "placement", "rundir"}},
	{"codecs", []string{"wire", "wire/reliable"}},
	{"memory, link interface, transport, roles, config files, test networks", []string{"memory", "memspec", "link", "transport", "role", "devices", "netns"}},
	{"links", []string{"link/..."}},
	{"engine", []string{"endpoint"}},
	{"assembly", []string{"node"}},
	{"services and clients", []string{"conformance", "addrtable", "client", "hub", "hub/proto", "replicate"}},
	{"the command", []string{"cmd/..."}},
	{"tests only", []string{"e2e", "contrib/...", "internal/testutil", "internal/hostile", "endpoint/endpointtest", "link/afpacket/afpackettest", "link/pcap/pcaptest", "wire/wiretest"}},
}

// floorOf returns the index in floors of package p (a path inside the
// module), or -1.
func floorOf(p string) int {
	best, bestLen := -1, -1
	for i, f := range floors {
		for _, q := range f.pkgs {
			n := len(q)
			if base, ok := strings.CutSuffix(q, "/..."); ok {
				if !strings.HasPrefix(p, base+"/") {
					continue
				}
				n = len(base)
			} else if p != q {
				continue
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best
}

// imports returns, for every package of the module, the module packages its
// non-test files import (with the file that does).
func imports(t *testing.T) map[string]map[string]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if out[pkg] == nil {
			out[pkg] = map[string]string{}
		}
		for _, im := range f.Imports {
			if q, ok := strings.CutPrefix(strings.Trim(im.Path.Value, `"`), module); ok {
				out[pkg][q] = filepath.Base(path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLayersOneWay: no non-test import runs up the floors, and every
// package of the module stands on one.
func TestLayersOneWay(t *testing.T) {
	all := imports(t)
	if len(all) < 20 {
		t.Fatalf("found %d packages: the walk did not see the module", len(all))
	}
	for pkg, ims := range all {
		fp := floorOf(pkg)
		if fp < 0 {
			t.Errorf("package %s is on no floor: add it to floors (and to CONTRIBUTING.md)", pkg)
			continue
		}
		for q, file := range ims {
			fq := floorOf(q)
			if fq > fp {
				t.Errorf("%s/%s imports %s: %q imports %q, a floor above", pkg, file, q, floors[fp].name, floors[fq].name)
			}
		}
	}
}

// testHelpers are the packages of helpers for tests: only test files import
// them.
var testHelpers = []string{"internal/testutil", "internal/hostile", "endpoint/endpointtest", "link/afpacket/afpackettest", "link/pcap/pcaptest", "wire/wiretest"}

// TestInternalHoldsLeaves: internal/ holds only leaf helpers (nothing there
// imports the engine, a link, the hub or the transport: helpers that need
// them live beside what they need), and the test helpers are imported by
// tests only.
func TestInternalHoldsLeaves(t *testing.T) {
	all := imports(t)
	for pkg, ims := range all {
		if strings.HasPrefix(pkg, "internal/") {
			for q, file := range ims {
				if !strings.HasPrefix(q, "internal/") {
					t.Errorf("%s/%s imports %s: internal/ holds leaf helpers only", pkg, file, q)
				}
			}
		}
		for q, file := range ims {
			if slices.Contains(testHelpers, q) && !slices.Contains(testHelpers, pkg) {
				t.Errorf("%s/%s (not a test) imports %s, a helper for tests", pkg, file, q)
			}
		}
	}
}

// TestFloorRankExample: the checks above can fail.
func TestFloorRankExample(t *testing.T) {
	if !(floorOf("link/afpacket") > floorOf("link")) || floorOf("hub") <= floorOf("endpoint") || floorOf("nowhere") != -1 {
		t.Fatal("floorOf does not rank the floors")
	}
}

// carriesFrames reports whether module package q is a link (package link
// or one under it) or the reliable transport: what the command and the hub
// reach through package node only.
func carriesFrames(q string) bool {
	for _, p := range []string{"link", "transport"} {
		if q == p || strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// TestStacksThroughNode: the command and the hub (and the command's runner
// of the hub, its server, its sessions, its demo and its bench) build no
// stack of their own: they open links, stacks, taps (dump --iface), relays
// and in-process switches through package node, and import no link, not
// even package link for its interface type or link/pcap for a capture's
// format, nor the transport.
func TestStacksThroughNode(t *testing.T) {
	if !carriesFrames("link") || !carriesFrames("link/pcap") || !carriesFrames("transport") || carriesFrames("linked") || carriesFrames("node") {
		t.Fatal("carriesFrames does not tell links from other packages")
	}
	all := imports(t)
	for _, pkg := range []string{"cmd/oetp", "hub", "cmd/oetp/internal/hubrun", "cmd/oetp/internal/serve", "cmd/oetp/internal/session", "cmd/oetp/internal/demo", "cmd/oetp/internal/bench"} {
		if all[pkg] == nil {
			t.Fatalf("package %s not found", pkg)
		}
		for q, file := range all[pkg] {
			if carriesFrames(q) {
				t.Errorf("%s/%s imports %s: open links and stacks through package node", pkg, file, q)
			}
		}
	}
}
