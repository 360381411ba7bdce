package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// The flag types of every command. Every address, size and length flag
// and configuration value is parsed by internal/num, the one number syntax
// of oetp: decimal, 0x hex, and K/M/G or KiB/MiB/GiB suffixes (powers of
// two). pflag names the flag and the value in the error; num adds the
// reason and an example.

// u32Flag is a pflag.Value for a 32-bit number (an address, a length, a
// data word). hex selects how help shows a non-zero default.
type u32Flag struct {
	v   uint32
	hex bool
}

func (u *u32Flag) String() string {
	switch {
	case u.v == 0:
		return "0" // pflag shows no default for a zero value
	case u.hex:
		return fmt.Sprintf("0x%08x", u.v)
	}
	return strconv.FormatUint(uint64(u.v), 10)
}
func (u *u32Flag) Type() string { return "uint32" }
func (u *u32Flag) Set(s string) error {
	v, err := num.Uint32(s)
	u.v = v
	return err
}

// intFlag is a pflag.Value for a non-negative int of at most 2^31-1 (a
// frame size, a byte count, a number of contexts), in the num syntax.
// set records that the flag was given, so that an explicit 0 can be told
// from the default.
type intFlag struct {
	v   int
	set bool
}

func (u *intFlag) String() string { return strconv.Itoa(u.v) }
func (u *intFlag) Type() string   { return "int" }
func (u *intFlag) Set(s string) error {
	v, err := num.ParseMax(s, math.MaxInt32)
	u.v, u.set = int(v), true
	return err
}

// macFlag is a pflag.Value for a MAC address; the zero MAC means not given
// and shows no default in the help.
type macFlag struct{ m wire.MAC }

func (m *macFlag) String() string {
	if m.m.IsZero() {
		return ""
	}
	return m.m.String()
}
func (m *macFlag) Type() string { return "MAC" }
func (m *macFlag) Set(s string) error {
	v, err := wire.ParseMAC(s)
	m.m = v
	return err
}

// formatFlag is a pflag.Value for a capture file format: pcapng (the
// default) or pcap.
type formatFlag struct{ f node.CaptureFormat }

func (f *formatFlag) String() string { return f.f.String() }
func (f *formatFlag) Type() string   { return "FORMAT" }
func (f *formatFlag) Set(s string) error {
	v, err := node.ParseCaptureFormat(s)
	f.f = v
	return err
}

// pcapFormatUsage is the help of --pcap-format.
const pcapFormatUsage = "file format of --pcap: pcapng, or pcap for classic libpcap files (microsecond timestamps) for older tools"

// hexValue is a pflag.Value for bytes written in hex (see parseHex).
type hexValue struct{ b []byte }

func (h *hexValue) String() string { return hex.EncodeToString(h.b) }
func (h *hexValue) Type() string   { return "HEX" }
func (h *hexValue) Set(s string) error {
	b, err := frames.ParseHex(s)
	h.b = b
	return err
}

// placementUsage is the help of --placement (cli.Placement says what it
// does).
const placementUsage = "thread placement `P`: auto (serve moves to the CPU its requests arrive on; a one-shot command stays on the CPU it started on; neither with the reliable transport, whose window keeps both busy at once) or off (the kernel's scheduler places the threads)"

// placementFlag is the pflag.Value of --placement.
type placementFlag struct{ p cli.Placement }

func (f *placementFlag) String() string { return f.p.String() }
func (f *placementFlag) Type() string   { return "P" }
func (f *placementFlag) Set(s string) error {
	p, err := cli.ParsePlacement(s)
	f.p = p
	return err
}

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
