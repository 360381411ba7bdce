// Command oetp is the oETP v1 toolbox: it decodes and encodes openENOC
// Ethernet Transport Protocol frames (raw Ethernet, EtherType 0x88B5) and
// hosts the endpoint tools.
//
// # Adding a command
//
// Each subcommand lives in a file named after it (version.go, relay.go) or
// after the topic it shares with its neighbours (frames.go: encode, decode
// and dump; oneshot.go: rmem, dma and regs; longrun.go: bench, demo and
// conformance; services.go: serve and hub). It defines a constructor that
// returns a fresh *cobra.Command and registers it, under the command's name,
// from an init function:
//
//	func init() { register("dump", newDumpCmd) }
//
//	func newDumpCmd() *cobra.Command {
//		return &cobra.Command{Use: "dump FILE.pcap", Short: "...", RunE: runDump}
//	}
//
// newRoot builds a new command tree from the registered constructors on
// every call, so tests can run commands in-process any number of times.
// run builds only the branch of the command it runs when the first argument
// names one (`oetp rmem read ...` constructs rmem's commands, not serve's
// or bench's flags): a shell loop pays process start, not the whole tree.
// Commands use RunE (never Run), write to cmd.OutOrStdout() and read
// cmd.InOrStdin(), and report outcomes through the returned error:
//
//   - nil: success, exit status 0;
//   - usagef(...) / usageError: bad usage or configuration, exit status 2.
//     The message names the flag or argument and says how to fix it;
//   - any other error: the operation failed, exit status 1;
//   - an interrupted one-shot command (interrupt.Context, interrupt.Wrap):
//     exit status 130 after SIGINT, 143 after SIGTERM.
//
// Errors raised by cobra itself before a command runs (unknown command or
// flag, unparsable flag value, wrong argument count) are usage errors too.
//
// # Subpackages
//
// What only this command uses lives under it: internal/bench (oetp bench:
// the rows, their floors and the report), internal/demo (oetp demo's fabric
// and report), internal/frames (what decode and dump print of a frame),
// internal/serve (oetp serve's settings, configuration file and run),
// internal/dmafile (the files of dma write --in and dma read --out),
// internal/regs (what regs does with an address table), internal/hubrun
// (oetp hub's configuration, run and status), internal/session (the route
// of a one-shot command: its own endpoint or a hub), internal/oneshot (a
// one-shot command's result, what a failure says, a group write's pacing
// and verification), internal/confrun (conformance run and list),
// internal/cli (the usage error and flag syntax the others share),
// internal/interrupt (what SIGINT and SIGTERM do to a command),
// internal/atexit (what an interrupted command undoes) and
// internal/manpages (go generate's man pages).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
)

// Exit statuses.
const (
	exitOK     = 0 // success
	exitFailed = 1 // the operation failed
	exitUsage  = 2 // bad usage or configuration
)

// command is a registered subcommand: its name (the first word of its
// Use) and its constructor.
type command struct {
	name string
	new  func() *cobra.Command
}

// commands holds the registered subcommands in registration order (file
// name order, since init functions run in that order).
var commands []command

// register adds a subcommand constructor under the command's name; call it
// from an init function. TestRegisteredNames checks name against Use.
func register(name string, newCmd func() *cobra.Command) {
	commands = append(commands, command{name, newCmd})
}

// usageError marks bad usage or configuration: exit status 2.
type usageError = cli.UsageError

// usagef returns a usageError; the message should name the flag or argument
// and the fix.
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// fileWords is a file operation's error as "PATH: REASON" ("/x: no such
// file or directory"), without Go's name of the operation ("open /x: ...").
func fileWords(err error) string { return cli.FileWords(err) }

// newRoot returns a fresh command tree. ran is set once a command's RunE
// starts, which tells cobra's own usage errors from a command's failures.
func newRoot(ran *bool) *cobra.Command { return newRootFor(ran, nil) }

// newRootFor returns the command tree for the command line args: only the
// named subcommand's branch when args[0] names a registered command, else
// (no arguments, a flag, help, completion, an unknown command to suggest
// for) the whole tree.
func newRootFor(ran *bool, args []string) *cobra.Command {
	only := -1
	if len(args) > 0 {
		for i, c := range commands {
			if c.name == args[0] {
				only = i
				break
			}
		}
	}
	root := &cobra.Command{
		Use:   "oetp",
		Short: "Tools for oETP v1, the openENOC Ethernet Transport Protocol",
		Long: `oetp works with oETP v1, the openENOC Ethernet Transport Protocol: remote
32-bit register access (RMEM) and bulk DMA reads and writes carried directly in
raw Ethernet frames (EtherType 0x88B5, Magic 0x0E, little-endian parameters,
frames up to 8192 bytes without FCS). It serves a memory map to peers
(serve), reads and writes a board's registers and memory (rmem, dma; regs by
name from an IPbus, LiteX or oetp address table), runs the specification's
replication example on an embedded network (demo), decodes captures and hex
dumps (dump, decode), builds stimulus frames (encode) and measures itself
against the medium's own limit (bench), exactly as the oETP v1 engine
specification lays the protocol out.

Exit status: 0 success, 1 the operation failed, 2 bad usage or configuration;
130 or 143 a command interrupted by SIGINT or SIGTERM (rmem, dma and regs keep how
far they got; bench, demo and conformance run remove what they made).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       readBuildInfo().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	for i, c := range commands {
		if only < 0 || i == only {
			root.AddCommand(c.new())
		}
	}
	if only >= 0 {
		// Completion runs through `oetp completion` and `oetp __complete`,
		// which build the whole tree; a pruned one skips cobra's default
		// completion command (its help texts cost 40 us of every start).
		root.CompletionOptions.DisableDefaultCmd = true
	}
	var mark func(c *cobra.Command)
	mark = func(c *cobra.Command) {
		if c != root && c.HasSubCommands() && c.Annotations[annotRuns] == "" {
			groupCommand(c)
		}
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				*ran = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			mark(sub)
		}
	}
	mark(root)
	return root
}

// annotRuns marks a command that has subcommands and also runs itself
// (`oetp hub --config FILE` beside `oetp hub status`): not a group.
const annotRuns = "oetp-runs-itself"

// groupCommand makes a command that only groups subcommands (rmem, dma...)
// report an unknown subcommand as such: without it, `oetp rmem rd --iface
// eth1` fails on the flags of `rmem` ("unknown flag: --iface") before the
// subcommand is looked at. Unknown flags are therefore let through to RunE,
// which names the unknown subcommand (with cobra's suggestions) or asks for
// one; both are usage errors.
func groupCommand(c *cobra.Command) {
	c.FParseErrWhitelist.UnknownFlags = true
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		list := strings.Join(names, ", ")
		if len(args) == 0 {
			return usagef("%s needs a subcommand: %s", cmd.CommandPath(), list)
		}
		hint := ""
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
			hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, " or "))
		}
		return usagef("unknown command %q for %s%s: use %s", args[0], cmd.CommandPath(), hint, list)
	}
}

// run executes the command line args and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var ran bool
	root := newRootFor(&ran, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ie *interrupt.Error
	if errors.As(err, &ie) {
		fmt.Fprintf(stderr, "oetp: %v\n", err)
		return ie.ExitCode()
	}
	var de *oneshot.DeniedError
	if errors.As(err, &de) {
		fmt.Fprintf(stderr, "oetp: %v\n", err)
		return exitUsage
	}
	var ue *usageError
	if errors.As(err, &ue) || !ran {
		fmt.Fprintf(stderr, "oetp: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	fmt.Fprintf(stderr, "oetp: %v\n", err)
	return exitFailed
}

// handOffOnExit is set by main: the process exits once the command has
// run, so a one-shot command's node hands its AF_PACKET sockets to a child
// process when it closes (node.Config.HandOffOnClose).
var handOffOnExit bool

func main() {
	handOffOnExit = true
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
