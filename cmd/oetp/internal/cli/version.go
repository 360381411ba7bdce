package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// BuildInfo is what `oetp version` reports, from the build information the
// Go toolchain embeds (runtime/debug.ReadBuildInfo).
type BuildInfo struct {
	Version  string `json:"version"`          // v1.2.3, a pseudo-version, or devel
	Commit   string `json:"commit,omitempty"` // vcs.revision of a build in a checkout
	Time     string `json:"time,omitempty"`   // vcs.time, the commit's time
	Modified bool   `json:"modified"`         // vcs.modified: the checkout had changes
	Go       string `json:"go"`               // the toolchain, e.g. go1.26.0
	OS       string `json:"os"`               // GOOS
	Arch     string `json:"arch"`             // GOARCH
	CGO      string `json:"cgo,omitempty"`    // CGO_ENABLED of the build: "0" for the static release build
	Protocol string `json:"protocol"`         // oETP v1
}

// FromBuildInfo reads bi (nil: none); linked, if set, is the version given
// at link time.
func FromBuildInfo(bi *debug.BuildInfo, linked string) BuildInfo {
	b := BuildInfo{Version: linked, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Protocol: "oETP v1"}
	if bi != nil {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "CGO_ENABLED":
				b.CGO = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// String is the one-line form of `oetp version` and `oetp --version`:
//
//	oetp v1.2.3 (commit 0123456789ab, 2026-12-01T09:00:00Z, modified; oETP v1, EtherType 0x88B5; go1.26.0 linux/amd64)
func (b BuildInfo) String() string {
	s := "oetp " + b.Version + " ("
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += "commit " + c
		if b.Time != "" {
			s += ", " + b.Time
		}
		if b.Modified {
			s += ", modified"
		}
		s += "; "
	}
	return s + fmt.Sprintf("oETP v1, EtherType 0x88B5; %s %s/%s)", b.Go, b.OS, b.Arch)
}
