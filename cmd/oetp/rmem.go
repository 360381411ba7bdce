package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
)

func init() { register("rmem", newRMEMCmd) }

func newRMEMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rmem",
		Short: "Read or write one 32-bit register of a remote endpoint (RMEM)",
		Long: `rmem reads or writes one aligned 32-bit word of a remote endpoint's memory with
RMEM_READ_REQ / RMEM_WRITE_REQ, as a one-shot initiator on --iface. It uses the
interface's MAC (or --mac) and a peer entry for --peer in mode 1 (RMEM); the
remote endpoint must have a mode 1 entry for this MAC whose window holds the
address. Received requests are ignored: a 'serve' on the same interface stays
the only responder.

When a hub (oetp hub) serves --iface and --peer, the command goes through it:
the hub sends the request from its local MAC for this kind of operation, and
the result reads exactly as without it. The hub is found through --hub, else
$OETP_HUB, /run/oetp/hub.sock or the per-user socket, in the same network
namespace; --no-hub, or a flag the hub cannot honour (--pcap, --timeout,
--max-frame, --busy-poll, a --mac other than the hub's), runs the command's own
endpoint.

Commands on one interface and MAC take turns: each holds its initiator role
while it runs (--wait), and starts its Request IDs at a random value, so a late
reply to an earlier command is never taken for its own.

With --retries N a try that times out, or is answered with a malformed
response, is sent again as a new request with a new Request ID, up to N times
and within --deadline; its timeout follows the measured round trip (RFC 6298
SRTT + 4*RTTVAR, at least 2ms, doubled per retry, at most --timeout). A valid
ERROR_RSP is never retried: it is the device's answer. A retry can repeat a
write whose response was lost; mark a register with side effects (a FIFO, a
clear-on-read register) --volatile and it gets exactly one try. Every failure
says in the JSON "outcome_unknown" whether it may have executed (sent, not
answered: true) or certainly did not (false); "retries" counts the
retransmissions, and "link" gives the round trips measured.

Exit status: 0 success, 1 the operation was attempted and failed (the JSON
error_code says why: 8 TIMEOUT, 9..15 an ERROR_RSP from the peer), 2 bad usage
or configuration, refused before anything is sent (an unaligned --addr, a group
--peer for a read, the own MAC as --peer, an interface that is down; with
--json the result still says LOCAL_INVALID, code 1).

SIGINT (Ctrl-C) or SIGTERM interrupts the command within a second: exit status
130 or 143, the message says "interrupted", and the JSON result keeps how far
it got ("interrupted": "SIGINT", "outcome_unknown").`,
	}
	cmd.AddCommand(newRMEMReadCmd(), newRMEMWriteCmd())
	return cmd
}

func newRMEMReadCmd() *cobra.Command {
	f := &opFlags{}
	cmd := &cobra.Command{
		Use:   "read (--device NAME | --iface IF --peer MAC) --addr A",
		Short: "Read one aligned 32-bit word",
		Long: `read sends one RMEM_READ_REQ and prints the word of the RMEM_READ_RSP. A group
--peer is refused before anything is sent (LOCAL_INVALID, code 1, exit 2): reads are
unicast only.`,
		Example: `  oetp rmem read --device board1 --addr 0x1000
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --json
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --retries 5 --timeout 200ms
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x2000 --retries 5 --volatile   # a FIFO: one try`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var v uint32
			r, err := f.do(cmd, "rmem read", endpoint.ModeRMEM, func(ctx context.Context, s session.Session) (err error) {
				v, err = s.RMEMRead(ctx, f.addr.v)
				return err
			})
			if err != nil {
				return err
			}
			if r.OK {
				r.Data = &v
			}
			return f.finish(cmd, r, fmt.Sprintf("rmem read %s 0x%08x = 0x%08x", f.peer.m, f.addr.v, v))
		},
	}
	f.read = true
	f.register(cmd)
	cmd.Flags().BoolVar(&f.volatile, "volatile", false, volatileUsage)
	return cmd
}

// volatileUsage is the help of rmem --volatile.
const volatileUsage = "the address has side effects (a FIFO, a clear-on-read register): never retry it, whatever --retries says"

func newRMEMWriteCmd() *cobra.Command {
	f := &opFlags{}
	data := &u32Flag{hex: true}
	mask := &u32Flag{v: 0xFFFFFFFF, hex: true}
	cmd := &cobra.Command{
		Use:   "write (--device NAME | --iface IF --peer MAC) --addr A --data D [--mask M]",
		Short: "Write the bits of one aligned 32-bit word selected by a mask",
		Long: `write sends one RMEM_WRITE_REQ: bit i of --mask (BitEnable) enables bit i of
--data. A unicast write completes on the peer's RMEM_WRITE_RSP; a write to a
group --peer is multicast: it completes as soon as the frame is sent, with no
reply and no timer (delivery is best effort). A zero mask is a valid no-op.`,
		Example: `  oetp rmem write --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --data 0xC0FFEE01
  oetp rmem write --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --data 0x0000AB00 --mask 0x0000FF00
  oetp rmem write --iface eth1 --peer 03:0e:0c:00:00:01 --addr 0x1004 --data 1   # every group member`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.do(cmd, "rmem write", endpoint.ModeRMEM, func(ctx context.Context, s session.Session) error {
				return s.RMEMWrite(ctx, f.addr.v, data.v, mask.v)
			})
			if err != nil {
				return err
			}
			human := fmt.Sprintf("rmem write %s 0x%08x = 0x%08x mask 0x%08x: ok", f.peer.m, f.addr.v, data.v, mask.v)
			if f.peer.m.IsGroup() {
				sent := 0
				if r.OK {
					sent = 1
				}
				r.SetGroup(sent)
				human = fmt.Sprintf("rmem write %s 0x%08x = 0x%08x mask 0x%08x: sent; %s", f.peer.m, f.addr.v, data.v, mask.v, oneshot.GroupNote(sent))
			}
			return f.finish(cmd, r, human)
		},
	}
	f.register(cmd)
	cmd.Flags().Var(data, "data", "the word `D` to write (decimal or 0x hex)")
	cmd.Flags().Var(mask, "mask", "BitEnable `M`: bit i enables data bit i")
	cmd.Flags().BoolVar(&f.volatile, "volatile", false, volatileUsage)
	if err := cmd.MarkFlagRequired("data"); err != nil {
		panic(err)
	}
	return cmd
}
