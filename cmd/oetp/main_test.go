package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Documentation MACs: A and B unicast, G a group.
const (
	macA = "02:0e:0c:00:00:0a"
	macB = "02:0e:0c:00:00:0b"
	macG = "03:0e:0c:00:00:01"
)

// runCLI runs oetp in-process and returns its output and exit status.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestRootAndVersion(t *testing.T) {
	out, errOut, code := runCLI(t, "")
	if code != exitOK || !strings.Contains(out, "openENOC Ethernet Transport Protocol") || errOut != "" {
		t.Errorf("oetp: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, sub := range []string{"decode", "encode", "version"} {
		if !strings.Contains(out, "\n  "+sub+" ") {
			t.Errorf("root help does not list %s:\n%s", sub, out)
		}
	}
	out, _, code = runCLI(t, "", "version")
	if code != exitOK || !regexp.MustCompile(`^oetp \S+ \(oETP v1, EtherType 0x88B5; go1\.\S+ \S+/\S+\)\n$`).MatchString(out) {
		t.Errorf("oetp version: exit %d, %q", code, out)
	}
	// A fresh tree per run: a second run sees no flag state from the first.
	if _, _, code := runCLI(t, "", "encode", "RMEM_WRITE_RSP", "--dst", macB, "--src", macA, "--rid", "1"); code != exitOK {
		t.Fatalf("encode: exit %d", code)
	}
	if _, errOut, code := runCLI(t, "", "encode", "RMEM_WRITE_RSP", "--dst", macB, "--src", macA); code != exitUsage || !strings.Contains(errOut, "--rid") {
		t.Errorf("second run kept --rid from the first: exit %d, %q", code, errOut)
	}
}

// TestUsageErrors checks that bad usage exits 2, prints nothing on stdout
// and names the flag or argument at fault.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 8161), 0o644); err != nil {
		t.Fatal(err)
	}
	enc := func(cmd string, extra ...string) []string {
		return append([]string{"encode", cmd, "--dst", macB, "--src", macA, "--rid", "1"}, extra...)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch" for "oetp"`},
		{[]string{"version", "extra"}, "takes no arguments"},
		{[]string{"decode", "--bogus", "00"}, "unknown flag: --bogus"},
		{[]string{"decode", "--max-frame", "20", "00"}, "--max-frame: max frame size 20 is out of range: use 36..8192"},
		{[]string{"decode", "--max-frame", "8193", "00"}, "--max-frame: max frame size 8193"},
		{[]string{"decode", "--max-frame", "abc", "00"}, `invalid argument "abc" for "--max-frame" flag`},
		{[]string{"decode", "--expect-length", "-1", "00"}, `for "--expect-length" flag: "-1" is not a number`},
		{[]string{"decode", "--expect-length", "0x100000000", "00"}, `"0x100000000" is too large; at most 4294967295 (0xffffffff)`},
		{[]string{"decode", "00", "zz"}, `argument 2: hex group "zz" contains 'z', which is not a hex digit`},
		{[]string{"decode", "0e1"}, `argument 1: hex group "0e1" has an odd number of digits`},
		{[]string{"encode"}, "encode takes exactly one CMD argument"},
		{[]string{"encode", "A", "B"}, "encode takes exactly one CMD argument"},
		{[]string{"encode", "RMEM_READ", "--dst", macB}, "CMD: unknown oETP command \"RMEM_READ\": use one of RMEM_READ_REQ"},
		{[]string{"encode", "0x12"}, "CMD: unknown oETP command \"0x12\""},
		{[]string{"encode", "RMEM_READ_REQ", "--src", macA, "--rid", "1", "--addr", "0"}, "RMEM_READ_REQ needs --dst MAC"},
		{[]string{"encode", "RMEM_READ_REQ", "--dst", macB, "--rid", "1", "--addr", "0"}, "RMEM_READ_REQ needs --src MAC"},
		{[]string{"encode", "RMEM_READ_REQ", "--dst", macB, "--src", macA, "--addr", "0"}, "RMEM_READ_REQ needs --rid N"},
		{[]string{"encode", "RMEM_READ_REQ", "--dst", "02:0e", "--src", macA}, `invalid argument "02:0e" for "--dst" flag: invalid MAC address`},
		{[]string{"encode", "RMEM_READ_REQ", "--dst", macB, "--src", macG, "--rid", "1", "--addr", "0"}, "--src 03:0e:0c:00:00:01 is a group address"},
		{enc("RMEM_READ_REQ", "--rid", "0x100000000"), `"0x100000000" is too large; at most 4294967295 (0xffffffff)`},
		{enc("RMEM_READ_REQ", "--rid", "1e3"), `invalid argument "1e3" for "--rid" flag: "1e3" is not a number; write decimal, 0x hex, optionally with K, M, G or KiB, MiB, GiB (powers of two), e.g. 4096, 0x1000, 64K, 16MiB`},
		{enc("RMEM_READ_REQ"), "RMEM_READ_REQ needs --addr A"},
		{enc("RMEM_READ_REQ", "--addr", "0", "--mask", "1"), "--mask does not apply to RMEM_READ_REQ (it takes --addr)"},
		{enc("RMEM_WRITE_REQ", "--addr", "0"), "RMEM_WRITE_REQ needs --data D"},
		{enc("RMEM_WRITE_RSP", "--data", "0"), "--data does not apply to RMEM_WRITE_RSP (it takes only --dst, --src and --rid)"},
		{enc("DMA_READ_REQ", "--addr", "0"), "DMA_READ_REQ needs --length N"},
		{enc("DMA_READ_REQ", "--addr", "0", "--length", "4", "--payload", "00"), "--payload/--payload-file does not apply to DMA_READ_REQ"},
		{enc("DMA_WRITE_REQ", "--addr", "0"), "DMA_WRITE_REQ needs --payload HEX or --payload-file F"},
		{enc("DMA_WRITE_REQ", "--addr", "0", "--payload", ""), "the payload holds 0 bytes: a DMA fragment carries 1..8160 bytes"},
		{enc("DMA_WRITE_REQ", "--addr", "0", "--payload-file", big), "the payload holds 8161 bytes"},
		{enc("DMA_WRITE_REQ", "--addr", "0", "--payload", "0102", "--payload-file", big), "--payload and --payload-file are alternatives"},
		{enc("DMA_WRITE_REQ", "--addr", "0", "--payload-file", filepath.Join(dir, "missing")), "--payload-file " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{enc("DMA_WRITE_REQ", "--addr", "0", "--payload", "0102", "--length", "4"), "--length 4 does not match the 2-byte payload"},
		{enc("DMA_READ_RSP", "--payload", "0g"), `invalid argument "0g" for "--payload" flag: hex group "0g" contains 'g'`},
		{enc("ERROR_RSP"), "ERROR_RSP needs --cause C"},
		{enc("ERROR_RSP", "--cause", "TIMEOUT"), `invalid argument "TIMEOUT" for "--cause" flag`},
		{enc("ERROR_RSP", "--cause", "REMOTE_AXIS"), `invalid argument "REMOTE_AXIS" for "--cause" flag`},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("oetp %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestRegisteredNames checks that every command is registered under its
// own name (run builds only that branch of the tree), and that a command
// run through the pruned tree reads as through the whole one.
func TestRegisteredNames(t *testing.T) {
	var ran bool
	root := newRoot(&ran)
	for _, c := range commands {
		sub, _, err := root.Find([]string{c.name})
		if err != nil || sub == root || sub.Name() != c.name {
			t.Errorf("register(%q, ...) builds a command named %q", c.name, sub.Name())
		}
		pruned := newRootFor(&ran, []string{c.name})
		if n := len(pruned.Commands()); n != 1 || pruned.Commands()[0].Name() != c.name {
			t.Errorf("newRootFor(%q) has %d commands", c.name, n)
		}
	}
	full, _, _ := runCLI(t, "", "rmem", "read", "--help")
	var out bytes.Buffer
	root = newRoot(&ran)
	root.SetArgs([]string{"rmem", "read", "--help"})
	root.SetOut(&out)
	root.Execute()
	if full != out.String() || !strings.Contains(full, "--addr") {
		t.Errorf("rmem read --help differs between the pruned and the whole tree:\n%s\n----\n%s", full, out.String())
	}
}
