package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
)

// version is the release version, set at link time with
// -ldflags "-X main.version=v1.2.3"; otherwise the module version that
// `go install github.com/openenoc/oetp/cmd/oetp@v1.2.3` records, else
// "devel".
var version = ""

func init() { register("version", newVersionCmd) }

// buildInfo is what `oetp version` reports (cli.BuildInfo).
type buildInfo = cli.BuildInfo

func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version)
}

// fromBuildInfo reads bi (nil: none); linked, if set, is the version given
// at link time.
var fromBuildInfo = cli.FromBuildInfo

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
