package memspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/memory"
)

func TestParseRegion(t *testing.T) {
	tests := []struct {
		in   string
		want RegionSpec
	}{
		{"0x1000:64K", RegionSpec{Base: 0x1000, Size: 64 << 10}},
		{"4096:65536", RegionSpec{Base: 0x1000, Size: 0x10000}},
		{"0X1000:0X10", RegionSpec{Base: 0x1000, Size: 0x10}},
		{"0x1000:0x10k", RegionSpec{Base: 0x1000, Size: 0x10 << 10}},
		{"010:010", RegionSpec{Base: 10, Size: 10}},
		{"1M:2m", RegionSpec{Base: 1 << 20, Size: 2 << 20}},
		{"0:4G", RegionSpec{Base: 0, Size: 1 << 32}},
		{"0:4g", RegionSpec{Base: 0, Size: 1 << 32}},
		{"0:64KiB", RegionSpec{Base: 0, Size: 64 << 10}},
		{"1MiB:0xFFFMiB", RegionSpec{Base: 1 << 20, Size: 0xFFF << 20}},
		{"0xFFFFF000:4K", RegionSpec{Base: 0xFFFFF000, Size: 4096}},
		{"0xffffffff:1", RegionSpec{Base: 0xFFFFFFFF, Size: 1}},
		{" 0x1000 : 64K ", RegionSpec{Base: 0x1000, Size: 64 << 10}},
		{"0x1000:64K:/dev/shm/oetp.mem", RegionSpec{Base: 0x1000, Size: 64 << 10, Path: "/dev/shm/oetp.mem"}},
		{"0x1000:64K:C:\\mem:x", RegionSpec{Base: 0x1000, Size: 64 << 10, Path: "C:\\mem:x"}},
		{"0x1000:64K:rel path", RegionSpec{Base: 0x1000, Size: 64 << 10, Path: "rel path"}},
	}
	for _, tt := range tests {
		roundTrip(t, "ParseRegion", ParseRegion, tt.in, tt.want)
	}
	if s := (RegionSpec{Base: 0x1000, Size: 0x10000, Path: "/m"}).String(); s != "0x1000:0x10000:/m" {
		t.Errorf("String() = %q", s)
	}
}

// spec is a parsed --region or --fault.
type spec interface {
	comparable
	String() string
}

// roundTrip checks that parse, named name, reads in as want, and reads
// what its result's String writes as the same spec again.
func roundTrip[S spec](t *testing.T, name string, parse func(string) (S, error), in string, want S) {
	t.Helper()
	got, err := parse(in)
	if err != nil {
		t.Errorf("%s(%q): %v", name, in, err)
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s(%q) (-want +got):\n%s", name, in, diff)
	}
	again, err := parse(got.String())
	if err != nil || again != got {
		t.Errorf("%s(%q.String() = %q) = %+v, %v; want %+v", name, in, got.String(), again, err, got)
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in   string
		want FaultSpec
	}{
		{"0x8000:4K:slverr", FaultSpec{Base: 0x8000, Size: 4096, Resp: memory.SLVERR}},
		{"0x8000:4K:SLVERR", FaultSpec{Base: 0x8000, Size: 4096, Resp: memory.SLVERR}},
		{"0x8000:16:decerr", FaultSpec{Base: 0x8000, Size: 16, Resp: memory.DECERR}},
		{"0:1:DecErr", FaultSpec{Base: 0, Size: 1, Resp: memory.DECERR}},
		{"0xfffffffc:4: slverr ", FaultSpec{Base: 0xFFFFFFFC, Size: 4, Resp: memory.SLVERR}},
	}
	for _, tt := range tests {
		roundTrip(t, "ParseFault", ParseFault, tt.in, tt.want)
	}
	if s := (FaultSpec{Base: 0x8000, Size: 0x1000, Resp: memory.DECERR}).String(); s != "0x8000:0x1000:decerr" {
		t.Errorf("String() = %q", s)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		fault  bool
		in     string
		part   string
		reason string // substring of the reason
	}{
		{false, "", "", "must be BASE:SIZE"},
		{false, "0x1000", "", "must be BASE:SIZE"},
		{false, ":64K", "BASE", "is empty"},
		{false, "0x1000:", "SIZE", "is empty"},
		{false, "0x1000:64Q", "SIZE", `"64Q" is not a number`},
		{false, "0x1000:64KB", "SIZE", `"64KB" uses KB, which is ambiguous`},
		{false, "0x:64K", "BASE", `"0x" is not a number`},
		{false, "K:64K", "BASE", `"K" is not a number`},
		{false, "0x10g0:4", "BASE", "is not a number"},
		{false, "-1:4", "BASE", "is not a number"},
		{false, "+1:4", "BASE", "is not a number"},
		{false, "1_000:4", "BASE", "is not a number"},
		{false, "0x1000:6 4", "SIZE", "is not a number"},
		{false, "0x100000000:4", "BASE", "past the 32-bit address space"},
		{false, "4G:4", "BASE", "past the 32-bit address space"},
		{false, "0x1000:0", "SIZE", "is 0"},
		{false, "0x1000:0K", "SIZE", "is 0"},
		{false, "0xFFFFF000:4097", "SIZE", "BASE+SIZE must be at most 0x100000000"},
		{false, "1:4G", "SIZE", "ends past the 32-bit address space"},
		{false, "0:99999999999999999999", "SIZE", "too large"},
		{false, "0:0xFFFFFFFFFFFFFFFFK", "SIZE", "too large"},
		{false, "0:17179869184G", "SIZE", "too large"},
		{false, "0x1000:64K:", "PATH", "is empty"},
		{true, "0x8000:4K", "", "must be BASE:SIZE:RESP"},
		{true, "0x8000:4K:slverr:x", "", "must be BASE:SIZE:RESP"},
		{true, "0x8000:4K:okay", "RESP", `"okay" is not slverr or decerr`},
		{true, "0x8000:4K:", "RESP", `"" is not slverr or decerr`},
		{true, "0x8000:0:slverr", "SIZE", "is 0"},
		{true, "zz:4K:slverr", "BASE", "is not a number"},
	}
	for _, tt := range tests {
		var err error
		flag, example := "--region", `--region "0x1000:64K"`
		if tt.fault {
			_, err = ParseFault(tt.in)
			flag, example = "--fault", `--fault "0x8000:4K:slverr"`
		} else {
			_, err = ParseRegion(tt.in)
		}
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("%s %q: error %v, want a *SpecError", flag, tt.in, err)
			continue
		}
		if se.Flag != flag || se.Input != tt.in || se.Part != tt.part || !strings.Contains(se.Reason, tt.reason) {
			t.Errorf("%s %q: got %+v, want part %q, reason containing %q", flag, tt.in, *se, tt.part, tt.reason)
		}
		msg := err.Error()
		for _, want := range []string{flag, `"` + tt.in + `"`, tt.part, example} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s %q: message %q lacks %q", flag, tt.in, msg, want)
			}
		}
	}
	_, err := ParseRegion("0x1000:64Q")
	const want = `--region "0x1000:64Q": SIZE "64Q" is not a number; write decimal, 0x hex, optionally with K, M, G or KiB, MiB, GiB (powers of two), e.g. 4096, 0x1000, 64K, 16MiB; example: --region "0x1000:64K" or --region "0x1000:64K:/dev/shm/oetp.mem"`
	if err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err, want)
	}
}

// checkSpecRange fails t unless base and size describe a valid region.
func checkSpecRange(t *testing.T, in string, base uint32, size uint64) {
	t.Helper()
	if size == 0 || uint64(base)+size > 1<<32 {
		t.Fatalf("%q parsed to base %#x size %#x: not a valid range", in, base, size)
	}
}

func FuzzParseRegion(f *testing.F) {
	fuzzParse(f, "--region ", ParseRegion, func(t *testing.T, in string, r RegionSpec) {
		checkSpecRange(t, in, r.Base, r.Size)
	}, "0x1000:64K", "0:4G", "0xffffffff:1", "1M:2m:/tmp/x", "0x1000:64K:", "::", "0x:0x", "18446744073709551615:1G", "0:17179869184G")
}

func FuzzParseFault(f *testing.F) {
	fuzzParse(f, "--fault ", ParseFault, func(t *testing.T, in string, fs FaultSpec) {
		checkSpecRange(t, in, fs.Base, fs.Size)
		if fs.Resp != memory.SLVERR && fs.Resp != memory.DECERR {
			t.Fatalf("%q parsed to response %v", in, fs.Resp)
		}
	}, "0x8000:4K:slverr", "0:1:DECERR", "0:1:okay", "a:b:c:d", "0:0:slverr")
}

// fuzzParse fuzzes parse from seeds: an error names the flag (its prefix),
// a spec passes check and reads what its String writes as itself again.
func fuzzParse[S spec](f *testing.F, flag string, parse func(string) (S, error), check func(t *testing.T, in string, s S), seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parse(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), flag) {
				t.Fatalf("error %q lacks the flag", err)
			}
			return
		}
		check(t, in, s)
		if again, err := parse(s.String()); err != nil || again != s {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", in, s, s.String(), again, err)
		}
	})
}
