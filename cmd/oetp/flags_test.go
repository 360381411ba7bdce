package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestOneNumberSyntax checks that every address, size and length flag takes
// the same syntax: the same frame comes out whichever way a number is
// written.
func TestOneNumberSyntax(t *testing.T) {
	encode := func(addr, length string) string {
		t.Helper()
		out, errOut, code := runCLI(t, "", "encode", "DMA_READ_REQ", "--dst", macB, "--src", macA, "--rid", "0x10",
			"--addr", addr, "--length", length)
		if code != exitOK {
			t.Fatalf("encode --addr %s --length %s: exit %d, %s", addr, length, code, errOut)
		}
		return out
	}
	want := encode("4096", "16777216")
	for _, f := range [][2]string{{"0x1000", "0x1000000"}, {"4K", "16M"}, {"4k", "16m"}, {"4KiB", "16MiB"}, {"0x4K", "0x10M"}} {
		if got := encode(f[0], f[1]); got != want {
			t.Errorf("--addr %s --length %s: %q, want %q", f[0], f[1], got, want)
		}
	}
}

func TestFlagTypes(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var u u32Flag
	var h = u32Flag{v: 0xFFFFFFFF, hex: true}
	var n intFlag
	var m macFlag
	fs.Var(&u, "addr", "")
	fs.Var(&h, "mask", "")
	fs.Var(&n, "max-frame", "")
	fs.Var(&m, "peer", "")
	if got := fs.Lookup("mask").DefValue; got != "0xffffffff" {
		t.Errorf("mask default shown as %q", got)
	}
	if got := fs.Lookup("peer").DefValue; got != "" {
		t.Errorf("zero MAC default shown as %q", got)
	}
	if err := fs.Parse([]string{"--addr", "4GiB", "--mask", "0xFF", "--max-frame", "8K", "--peer", "02:0e:0c:00:00:02"}); err == nil ||
		!strings.Contains(err.Error(), `invalid argument "4GiB" for "--addr" flag: "4GiB" is too large; at most 4294967295`) {
		t.Errorf("--addr 4GiB: %v", err)
	}
	if err := fs.Parse([]string{"--addr", "0xFFFFF000", "--mask", "0xFF", "--max-frame", "8K", "--peer", "02:0e:0c:00:00:02"}); err != nil {
		t.Fatal(err)
	}
	if u.v != 0xFFFFF000 || h.v != 0xFF || n.v != 8192 || m.m.String() != "02:0e:0c:00:00:02" {
		t.Errorf("parsed %#x %#x %d %v", u.v, h.v, n.v, m.m)
	}
	if u.String() != "4294963200" || h.String() != "0x000000ff" {
		t.Errorf("String: %q %q", u.String(), h.String())
	}
	for _, bad := range []string{"2G", "-1", "64KB"} {
		if err := n.Set(bad); err == nil || !strings.Contains(err.Error(), "e.g.") && !strings.Contains(err.Error(), "at most") && !strings.Contains(err.Error(), "ambiguous") {
			t.Errorf("intFlag.Set(%q) = %v", bad, err)
		}
	}
}
