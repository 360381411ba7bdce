package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// This file holds the flags of `dma write` for a group --peer: pacing from
// the members (--member) and reading every member back (--verify). What
// they do is package oneshot's (oneshot.Group), the work package
// replicate's.

// groupFlags are the group-write flags of dma write.
type groupFlags struct {
	members   macsFlag
	verify    bool
	verifyMAC macFlag
}

func (g *groupFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Var(&g.members, "member", "unicast `MAC` of a member of the group --peer (repeatable): each is probed with unicast DMA writes of the first fragment and the group's fragments are paced at the slowest member's time per fragment (plus 50% and the spread of its round trips), checked every 16 fragments; its entry for this MAC must accept DMA writes (mode dma-write)")
	fs.BoolVar(&g.verify, "verify", false, "after a group write, read each --member back through --verify-mac, rewrite the fragments that differ by unicast, and report per member; exit 0 only when every member verified")
	fs.Var(&g.verifyMAC, "verify-mac", "own unicast `MAC` the --verify reads are sent from: each member needs an entry for it in mode dma-read (3); a v1 entry has one mode, so it differs from --mac")
}

// macsFlag is a repeatable MAC flag.
type macsFlag []wire.MAC

func (m *macsFlag) String() string {
	s := make([]string, len(*m))
	for i, v := range *m {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}
func (m *macsFlag) Type() string { return "MAC" }
func (m *macsFlag) Set(s string) error {
	v, err := wire.ParseMAC(s)
	if err != nil {
		return err
	}
	*m = append(*m, v)
	return nil
}

// group is the group write the flags ask for.
func (g *groupFlags) group() *oneshot.Group {
	return &oneshot.Group{Members: g.members, Verify: g.verify, VerifyMAC: g.verifyMAC.m}
}

// write is what oneshot.Group.Start needs of the write f: its MACs, the
// flags the members' entries and the reader take, and the reader's opening
// (--verify-mac toward the first member, on this command's own endpoint).
func (g *groupFlags) write(cmd *cobra.Command, f *dmaFlags) oneshot.GroupWrite {
	w := oneshot.GroupWrite{Own: f.own, Peer: f.peer.m, Addr: f.addr.v, Retries: f.retries.v > 0, Rate: f.rate > 0}
	if cmd.Flags().Changed("fragment") {
		w.Fragment = f.fragment.v
	}
	w.OpenReader = func() (*session.Local, error) {
		rf := f.opFlags
		rf.mac, rf.peer, rf.noHub, rf.hub = g.verifyMAC, macFlag{g.members[0]}, true, ""
		rf.rate, rf.pcap, rf.transport = 0, "", "v1"
		rs, err := rf.open(endpoint.ModeDMAWrite)
		if err != nil {
			return nil, err
		}
		return rs.(*localSession), nil // --no-hub
	}
	return w
}
