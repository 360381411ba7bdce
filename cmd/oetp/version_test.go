package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildInfo(t *testing.T) {
	plat := fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	vcs := []debug.BuildSetting{
		{Key: "CGO_ENABLED", Value: "0"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "7881720402c46024554a50f3e08d538d35b232c1"},
		{Key: "vcs.time", Value: "2026-12-01T09:51:21Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, c := range []struct {
		name   string
		bi     *debug.BuildInfo
		linked string
		want   string
	}{
		{"none", nil, "", "oetp devel (oETP v1, EtherType 0x88B5; " + plat + ")"},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "oetp v1.2.3 (oETP v1, EtherType 0x88B5; " + plat + ")"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "",
			"oetp devel (commit 7881720402c4, 2026-12-01T09:51:21Z, modified; oETP v1, EtherType 0x88B5; " + plat + ")"},
		{"-X main.version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs[:4]}, "v1.3.0-rc1",
			"oetp v1.3.0-rc1 (commit 7881720402c4, 2026-12-01T09:51:21Z; oETP v1, EtherType 0x88B5; " + plat + ")"},
	} {
		if got := fromBuildInfo(c.bi, c.linked).String(); got != c.want {
			t.Errorf("%s: %q\nwant %q", c.name, got, c.want)
		}
	}
	b, _ := json.Marshal(fromBuildInfo(&debug.BuildInfo{Settings: vcs}, ""))
	want := `{"version":"devel","commit":"7881720402c46024554a50f3e08d538d35b232c1","time":"2026-12-01T09:51:21Z","modified":true,` +
		`"go":"` + runtime.Version() + `","os":"` + runtime.GOOS + `","arch":"` + runtime.GOARCH + `","cgo":"0","protocol":"oETP v1"}`
	if string(b) != want {
		t.Errorf("JSON %s\nwant %s", b, want)
	}
}

// TestVersionFlag: `oetp --version` and `oetp version` print the same line,
// from this binary's build information.
func TestVersionFlag(t *testing.T) {
	a, _, code1 := runCLI(t, "", "--version")
	b, _, code2 := runCLI(t, "", "version")
	if code1 != 0 || code2 != 0 || a != b || a != readBuildInfo().String()+"\n" {
		t.Errorf("--version %q (exit %d), version %q (exit %d)", a, code1, b, code2)
	}
	out, _, code := runCLI(t, "", "version", "--json")
	var got buildInfo
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("version --json: %v, exit %d: %s", err, code, out)
	}
	if diff := cmp.Diff(readBuildInfo(), got); diff != "" || !strings.HasSuffix(out, "\n") {
		t.Errorf("version --json (-want +got):\n%s", diff)
	}
}
