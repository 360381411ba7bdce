package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/confrun"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/wire"
)

func init() { register("conformance", newConformanceCmd) }

func newConformanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Check that a device on an interface follows the oETP v1 specification",
		Long: `conformance checks a device — a board through a NIC, an RTL simulation through a
TAP device, or an oetp serve — against the oETP v1 engine specification, from
the outside: it sends raw frames from the MACs of the device's peers and checks
every reply against the sentence of the specification each case quotes.

A DUT file (TOML; see dut-template) says how the device is programmed: its
frame ceiling, group address, peer table (the runner sends from those MACs),
bus-error ranges and a MAC it does not know. A case that needs a key the file
lacks is skipped and names the key; skipped is not failed.`,
	}
	cmd.AddCommand(newConformanceRunCmd(), newConformanceListCmd(), newConformanceTemplateCmd())
	return cmd
}

func newConformanceRunCmd() *cobra.Command {
	var (
		iface, dutPath, junit, pcapPath string
		target                          macFlag
		only                            []string
		asJSON, linkPads                bool
		timeout, wait                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run --iface IF --target MAC --dut FILE [--only ID_PREFIX]... [--json] [--junit FILE] [--pcap FILE]",
		Short: "Run the conformance cases against a device",
		Long: `run sends each case's frames on --iface to the device --target, from the MACs of
the peers in the DUT file, and checks the replies, which one socket receives for
all of those MACs (registered with the interface; no promiscuous mode). It needs
CAP_NET_RAW.

It prints one line per case: its verdict, its ID and a detail. PASS: the device
did what the rule says; VARIANT: it did something else the specification also
allows, named (e.g. "mode-0 entry treated as unknown source"); FAIL: it broke
the rule (the line also shows the rule and the frames sent (>) and received (<)
in hex); SKIP: the DUT file lacks a key the case needs, named. Responder cases
send the device requests; initiator cases make the device send requests
through the DUT file's [initiator] trigger commands and answer them. A device
that stops answering during the run is reported with its likely causes. --json
prints instead one JSON object {"cases":[{"id","section","role","rule",
"verdict","variant","reason","detail"}],"passed","variants","failed","skipped",
"silent"} (role responder or initiator; variant for the verdict variant, reason
for skip; silent when the device went silent), with the frames of failed cases
on standard error. --junit writes JUnit XML,
--pcap the frames of the cases. --only runs the cases under an ID prefix:
oetp/cmd runs a section, oetp/cmd/3 one case; repeat it for several.

Through a physical NIC, which pads frames shorter than 60 bytes, give
--link-pads: the cases that must send shorter frames are then skipped.

The runner is the initiator of every MAC it sends from (the DUT's peers and its
unknown MAC): it holds their initiator roles for the whole run, as rmem and dma
do for theirs, so no other process takes its replies and it takes none of
theirs. A role another process holds is waited for (--wait), then the run exits
2 naming the holder. An oetp serve on one of those MACs (a responder) runs
beside it.

Exit status: 0 no case failed (variants and skips included), 1 a case failed, 2 bad usage, a bad DUT file or
an interface the runner cannot use.`,
		Example: `  oetp conformance dut-template > dut.toml
  oetp conformance run --iface eth1 --target 02:0e:0c:00:00:01 --dut dut.toml
  oetp conformance run --iface eth1 --target 02:0e:0c:00:00:01 --dut dut.toml --only oetp/access --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iface == "" {
				return usagef("--iface is required: the interface on the device's network (list them with `ip link`)")
			}
			if target.m.IsZero() {
				return usagef("--target is required: the device's unicast MAC, e.g. 02:0e:0c:00:00:01")
			}
			if target.m.IsGroup() {
				return usagef("--target %v is a group address: give the device's own unicast MAC", target.m)
			}
			if dutPath == "" {
				return usagef("--dut is required: the DUT file (write one with `oetp conformance dut-template > dut.toml`)")
			}
			if timeout < 0 {
				return usagef("--timeout %v is negative: give a duration such as 500ms", timeout)
			}
			dut, err := conformance.LoadDUT(dutPath)
			if err != nil {
				return usagef("--dut: %v", err)
			}
			if _, err := conformance.Select(only); err != nil {
				return usagef("%v", err)
			}
			ifi, err := lookupIface("--iface", iface)
			if err != nil {
				return err
			}
			maxFrame := min(wire.MaxFrameLen+4, ifi.MTU+wire.HeaderLen)
			if maxFrame < wire.MinFrameLen {
				return usagef("--iface %s has MTU %d, too small for oETP frames: raise it (ip link set dev %s mtu 9000)", iface, ifi.MTU, iface)
			}
			return confrun.Run(cmd, confrun.Config{Iface: iface, MaxFrame: maxFrame, Target: target.m, DUT: dut, Only: only,
				Timeout: timeout, Wait: wait, LinkPads: linkPads, Pcap: pcapPath, JSON: asJSON, JUnit: junit})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&iface, "iface", "", "network interface `IF` on the device's network")
	fs.Var(&target, "target", "the device's unicast `MAC`")
	fs.StringVar(&dutPath, "dut", "", "the DUT `FILE` (TOML) saying how the device is programmed")
	fs.StringArrayVar(&only, "only", nil, "run only the cases under `ID_PREFIX` (oetp/cmd, oetp/cmd/3); repeatable")
	fs.BoolVar(&asJSON, "json", false, "print the results as one JSON object")
	fs.StringVar(&junit, "junit", "", "write the results as JUnit XML to `FILE`")
	fs.StringVar(&pcapPath, "pcap", "", "write the frames the cases sent and received to `FILE` (pcapng)")
	fs.DurationVar(&timeout, "timeout", conformance.DefaultTimeout, "how long to wait for each reply `D`")
	fs.DurationVar(&wait, "wait", 10*time.Second, "wait up to `D` for the initiator role of each MAC the runner sends from while another process (an rmem, a dma) holds it, then exit 2 naming it; 0 refuses at once")
	fs.BoolVar(&linkPads, "link-pads", false, "the interface pads frames shorter than 60 bytes (a physical NIC): skip the cases that need shorter frames")
	return cmd
}

func newConformanceListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the conformance cases: ID, section, role, the rule each checks and the DUT keys it needs",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return confrun.List(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the cases as a JSON array")
	return cmd
}

func newConformanceTemplateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dut-template",
		Short: "Print a commented DUT file, with the oetp serve command that programs a software endpoint to match it",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), conformance.Template)
			return err
		},
	}
}
