package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version, set at link time with
// -ldflags "-X main.version=v1.2.3"; otherwise the module version that
// `go install github.com/openenoc/oetp/cmd/oetp@v1.2.3` records, else
// "devel".
var version = ""

func init() { register("version", newVersionCmd) }

// buildInfo is what `oetp version` reports, from the build information the
// Go toolchain embeds (runtime/debug.ReadBuildInfo).
type buildInfo struct {
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

func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version)
}

// fromBuildInfo reads bi (nil: none); linked, if set, is the version given
// at link time.
func fromBuildInfo(bi *debug.BuildInfo, linked string) buildInfo {
	b := buildInfo{Version: linked, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Protocol: "oETP v1"}
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
func (b buildInfo) String() string {
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

// buildVersion is the version alone, for other commands' reports.
func buildVersion() string { return readBuildInfo().Version }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the oetp version, commit and toolchain",
		Long: `version prints the version of this oetp binary from the build information the
Go toolchain embeds: the module version (for 'go install ...@v1.2.3'), or for a
build in a git checkout the commit, its time and whether the checkout had
uncommitted changes; then the Go version and the platform. 'oetp --version'
prints the same line. --json prints one object with the keys version, commit,
time, modified, go, os, arch, cgo and protocol.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(b)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as one JSON object")
	return cmd
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments; got %q", cmd.CommandPath(), args)
	}
	return nil
}
