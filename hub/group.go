package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

// A group of devices ([[group]] in the configuration) is replicated to
// with one group DMA write (GROUP_WRITE, docs/replication.md): the hub sends
// it from a local MAC of the group's own, which every member has in mode
// dma-write, after probing each member from that MAC with unicast writes of
// the first fragment, and paces it at the slowest member's time per
// fragment (package replicate). With verify it then reads every member back
// through the member's own dma_read MAC and repairs it by unicast.

// GroupConfig is one [[group]] table.
type GroupConfig struct {
	Name string
	// MAC is the group address the members accept group writes on.
	MAC wire.MAC
	// Devices are the members' device names; they share one interface.
	Devices []string
	// Local is the hub's MAC for the group's writes; zero derives one.
	Local wire.MAC
}

type fileGroup struct {
	Name    string   `toml:"name"`
	MAC     string   `toml:"mac"`
	Devices []string `toml:"devices"`
	Local   string   `toml:"local"`
}

// loadGroups converts the [[group]] tables.
func loadGroups(path string, fgs []fileGroup) ([]GroupConfig, error) {
	var out []GroupConfig
	for i, fg := range fgs {
		where := fmt.Sprintf("hub config %s: [[group]] %d", path, i+1)
		if fg.Name != "" {
			where += fmt.Sprintf(" (%s)", fg.Name)
		}
		g := GroupConfig{Name: fg.Name, Devices: fg.Devices}
		var err error
		if fg.MAC == "" {
			return nil, fmt.Errorf("%s: mac is missing: give the group address the members accept, e.g. mac = \"03:0e:0c:00:00:01\"", where)
		}
		if g.MAC, err = wire.ParseMAC(fg.MAC); err != nil {
			return nil, fmt.Errorf("%s: mac: %v", where, err)
		}
		if fg.Local != "" {
			if g.Local, err = wire.ParseMAC(fg.Local); err != nil {
				return nil, fmt.Errorf("%s: local: %v", where, err)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// checkGroups validates the groups against the devices and derives omitted
// local MACs; used maps (interface, MAC) to its user for the devices' local
// MACs.
func (c *Config) checkGroups() error {
	type key struct {
		iface string
		mac   wire.MAC
	}
	used := map[key]string{}
	byName := map[string]*DeviceConfig{}
	for i := range c.Devices {
		d := &c.Devices[i]
		byName[d.Name] = d
		for k := range numKinds {
			used[key{d.Iface, d.Local[k]}] = fmt.Sprintf("device %q local.%s", d.Name, Kind(k))
		}
	}
	names := map[string]bool{}
	for i := range c.Groups {
		g := &c.Groups[i]
		if err := checkName("group", i, g.Name, "write to", "all"); err != nil {
			return err
		}
		if names[g.Name] || byName[g.Name] != nil {
			return fmt.Errorf("group %q: the name is already used by another group or a device", g.Name)
		}
		names[g.Name] = true
		if !g.MAC.IsGroup() {
			return fmt.Errorf("group %q: mac %v is not a group address (bit 0 of the first octet set, such as 03:0e:0c:00:00:01)", g.Name, g.MAC)
		}
		if len(g.Devices) == 0 {
			return fmt.Errorf("group %q: devices is empty: list the member devices' names, e.g. devices = [\"board1\", \"board2\"]", g.Name)
		}
		if len(g.Devices) > endpoint.MaxPeers-1 {
			return fmt.Errorf("group %q: %d devices; at most %d", g.Name, len(g.Devices), endpoint.MaxPeers-1)
		}
		seen := map[string]bool{}
		var iface string
		for _, n := range g.Devices {
			d := byName[n]
			if d == nil {
				return fmt.Errorf("group %q: no [[device]] is named %q", g.Name, n)
			}
			if seen[n] {
				return fmt.Errorf("group %q: device %q is listed twice", g.Name, n)
			}
			seen[n] = true
			if iface == "" {
				iface = d.Iface
			} else if d.Iface != iface {
				return fmt.Errorf("group %q: device %q is on %s, the others on %s: one group write reaches the members through one interface", g.Name, n, d.Iface, iface)
			}
		}
		if g.Local.IsZero() {
			g.Local = DeriveMAC(g.MAC, g.Name, KindDMAWrite)
		}
		if g.Local.IsGroup() {
			return fmt.Errorf("group %q: local %v is a group address; the hub's own MACs must be unicast", g.Name, g.Local)
		}
		k := key{iface, g.Local}
		if other, dup := used[k]; dup {
			return fmt.Errorf("group %q: local %v on %s is already used by %s: give the group its own MAC (or omit it to derive one)", g.Name, g.Local, iface, other)
		}
		used[k] = fmt.Sprintf("group %q", g.Name)
	}
	return nil
}

// groupPeerEntries returns what --print-peer-entries adds for the groups:
// every member's entry for the group's MAC, and its group address.
func (c Config) groupPeerEntries() string {
	var b strings.Builder
	for _, g := range c.Groups {
		fmt.Fprintf(&b, "\n# group %s (%v): on each member (%s), the group address (oetp serve: group = %q) and\n", g.Name, g.MAC, strings.Join(g.Devices, ", "), g.MAC.String())
		fmt.Fprintf(&b, "[[peer]]\nmac = %q\nmode = \"dma-write\"  # the hub's group writes, probes and repairs\n", g.Local.String())
	}
	return b.String()
}

// Group is one group of devices the hub writes to.
type Group struct {
	Config  GroupConfig
	members []*Device
	ep      *endpoint.Endpoint // peer 0 the group, i+1 member i
	role    *role.Lock
	mu      sync.Mutex // one group write at a time: the interval is the write's
}

// openGroup opens the group's endpoint on its local MAC.
func (h *Hub) openGroup(gc GroupConfig, open Opener) (*Group, error) {
	g := &Group{Config: gc}
	for _, n := range gc.Devices {
		g.members = append(g.members, h.byName[n])
	}
	first := g.members[0].Config
	if h.cfg.HoldRoles {
		lk, err := role.Acquire(first.Iface, gc.Local, role.Initiator, 0)
		if err != nil {
			return nil, err
		}
		g.role = lk
	}
	l, err := open(DeviceConfig{Name: gc.Name, Iface: first.Iface, MAC: gc.MAC, MaxFrame: first.MaxFrame, BusyPoll: first.BusyPoll}, KindDMAWrite, gc.Local)
	if err != nil {
		g.close()
		return nil, err
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.Config.DMATimeout)
	}
	cfg := endpoint.Config{MAC: gc.Local, MaxFrame: min(l.MaxFrame(), wire.MaxFrameLen), DMATimeout: timeout, RMEMTimeout: timeout}
	if first.MaxFrame != 0 {
		cfg.MaxFrame = min(first.MaxFrame, wire.MaxFrameLen)
	}
	if g.ep, err = endpoint.New(l, nil, cfg); err != nil {
		l.Close()
		g.close()
		return nil, err
	}
	if err := g.ep.SetPeer(0, endpoint.Peer{MAC: gc.MAC, Mode: endpoint.ModeDMARead, WindowSize: 1 << 32}); err != nil {
		g.close()
		return nil, err
	}
	for i, m := range g.members {
		err := g.ep.SetPeer(i+1, endpoint.Peer{MAC: m.Config.MAC, Mode: endpoint.ModeDMARead, WindowSize: 1 << 32})
		if err == nil {
			pol := m.Config.Retry
			pol.Volatile = nil // a member's volatile registers are not where blocks go
			err = g.ep.SetRetryPolicy(i+1, pol)
		}
		if err != nil {
			g.close()
			return nil, err
		}
	}
	return g, nil
}

func (g *Group) close() {
	if g.ep != nil {
		g.ep.Close()
	}
	if g.role != nil {
		g.role.Release()
	}
}

// write probes the members, writes data to the group at addr paced at the
// slowest member, and with verify reads every member back and repairs it.
// err is the first failure: a probe's (nothing sent to the group), the
// group write's, or a member's that could not be verified (its device
// named).
func (g *Group) write(addr uint32, data []byte, verify bool) (proto.GroupResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	res := proto.GroupResult{Group: g.Config.Name, MAC: g.Config.MAC.String(), Addr: addr, Delivery: "unconfirmed", Members: []proto.GroupMember{}}
	src := bytesSpace(data)
	peers := make([]int, len(g.members))
	for i := range peers {
		peers[i] = i + 1
	}
	probes, err := replicate.ProbeMembers(opCtx, g.ep, peers, addr, src, 0, uint64(len(data)))
	if err != nil {
		return res, fmt.Errorf("%s; no group frame was sent", g.named(err))
	}
	pace := replicate.NewPacing(probes, peers)
	res.Pacing = proto.GroupPacing{Source: "members", IntervalUS: us(pace.Start), Margin: replicate.Margin, Slowest: g.members[pace.Slowest].Config.Name}
	for i, p := range probes {
		gp := proto.GroupProbe{Device: g.members[i].Config.Name, Member: p.Member.String(), PerFragmentUS: us(p.PerFragment)}
		for _, d := range p.RoundTrips {
			gp.RoundTripsUS = append(gp.RoundTripsUS, us(d))
		}
		res.Pacing.Probes = append(res.Pacing.Probes, gp)
	}
	t, err := pace.Write(opCtx, g.ep, 0, addr, src, 0, uint64(len(data)), nil)
	res.Bytes, res.Fragments = t.Bytes, t.Fragments
	for _, d := range pace.Checks {
		res.Pacing.ChecksUS = append(res.Pacing.ChecksUS, us(d))
	}
	if pace.Raised > 0 {
		res.Pacing.RaisedToUS = us(pace.Interval)
	}
	if err != nil {
		return res, err
	}
	mfs := replicate.FragmentSize(g.ep)
	var first error
	for i, d := range g.members {
		gm := proto.GroupMember{Device: d.Config.Name, Member: d.Config.MAC.String(), State: "unverified", Repaired: []proto.GroupFragment{}}
		if verify {
			rep := replicate.Verify(opCtx, replicate.Member{MAC: d.Config.MAC, Writer: g.ep, WritePeer: i + 1, Reader: d.eps[KindDMARead], ReadPeer: 0},
				addr, src, 0, uint64(len(data)), mfs)
			gm.State, gm.Fragments, gm.FragmentsChecked, gm.FragmentsRepaired = rep.State, rep.Fragments, rep.Checked, len(rep.Repaired)
			for _, f := range rep.Repaired {
				gm.Repaired = append(gm.Repaired, proto.GroupFragment{Index: f.Index, Addr: f.Addr, Len: f.Len})
			}
			if rep.Err != nil {
				gm.Error, gm.ErrorCode = replicate.Message(rep.Err), uint8(endpoint.CodeOf(rep.Err))
				if first == nil {
					first = &memberError{device: d.Config.Name, mac: d.Config.MAC, err: rep.Err, msg: gm.Error}
				}
			}
		}
		res.Members = append(res.Members, gm)
	}
	if verify && first == nil {
		res.Delivery = "verified"
	}
	return res, first
}

// named says which member a probe's error is about, by device name.
func (g *Group) named(err error) string {
	msg := replicate.Message(err)
	for _, d := range g.members {
		msg = strings.Replace(msg, "member "+d.Config.MAC.String(), fmt.Sprintf("member %s (%v)", d.Config.Name, d.Config.MAC), 1)
	}
	return msg
}

// memberError is a member that failed verification.
type memberError struct {
	device string
	mac    wire.MAC
	err    error
	msg    string
}

func (e *memberError) Error() string {
	return fmt.Sprintf("member %s (%v) failed verification: %s", e.device, e.mac, e.msg)
}
func (e *memberError) Unwrap() error { return e.err }

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// bytesSpace is a byte slice as a read-only memory.Space from address 0.
type bytesSpace []byte

func (b bytesSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	if uint64(addr)+uint64(len(p)) > uint64(len(b)) {
		return memory.DECERR
	}
	copy(p, b[addr:])
	return memory.OKAY
}
func (b bytesSpace) WriteAt(p []byte, addr uint32) memory.Resp { return memory.SLVERR }
func (b bytesSpace) ReadWord(addr uint32) (uint32, bool)       { return 0, false }
func (b bytesSpace) WriteWord(addr, data, mask uint32) bool    { return false }

// groupWrite serves GROUP_WRITE.
func (c *conn) groupWrite(hdr proto.Header, body []byte, out []byte) []byte {
	dec := proto.Decoder{B: body}
	flags := dec.U8("GROUP_WRITE flags")
	name := dec.Str16("GROUP_WRITE group name")
	addr := dec.U32("GROUP_WRITE address")
	data := dec.B
	if dec.Err == nil && len(data) == 0 {
		dec.Err = errors.New("GROUP_WRITE carries no data: a DMA block carries at least one byte")
	}
	if dec.Err == nil && flags&^proto.GroupVerify != 0 {
		dec.Err = fmt.Errorf("GROUP_WRITE flags 0x%02x: only bit 0 (verify) is defined", flags)
	}
	if dec.Err != nil {
		return c.bad(out, hdr, dec.Err)
	}
	if len(data) > proto.MaxBlock {
		return fail(out, hdr, proto.StatusTooLarge, "GROUP_WRITE of %d bytes exceeds the %d-byte limit; split it", len(data), proto.MaxBlock)
	}
	if uint64(addr)+uint64(len(data)) > 1<<32 {
		return c.bad(out, hdr, fmt.Errorf("GROUP_WRITE of %d bytes at %#x ends past the 4 GiB address space", len(data), addr))
	}
	g := c.h.groups[name]
	if g == nil {
		return fail(out, hdr, proto.StatusNoDevice, "no group %q; this hub has %s", name, c.h.groupNames())
	}
	for _, d := range g.members {
		if why := c.denied(d, true); why != "" {
			return fail(out, hdr, proto.StatusDenied, "group_write %s: %s", name, why)
		}
	}
	res, err := g.write(addr, data, flags&proto.GroupVerify != 0)
	b, jerr := json.Marshal(res)
	if jerr != nil {
		return fail(out, hdr, proto.StatusBadMessage, "group_write: %v", jerr)
	}
	if err != nil {
		// The probes write the first fragment by unicast: from then on,
		// any failure may have left writes behind.
		out = proto.AppendReplyHeader(out, hdr, uint8(endpoint.CodeOf(err)), proto.FlagMaybeExecuted,
			fmt.Sprintf("group_write %s 0x%08x+%d: %s", name, addr, len(data), outcomeOrSelf(err)))
	} else {
		out = ok(out, hdr)
	}
	return proto.Finish(append(out, b...), 0)
}

// outcomeOrSelf is a member's failure as it reads, else the outcome.
func outcomeOrSelf(err error) string {
	var me *memberError
	if errors.As(err, &me) {
		return me.Error()
	}
	return replicate.Message(err)
}

func (h *Hub) groupNames() string {
	if len(h.cfg.Groups) == 0 {
		return "no [[group]]"
	}
	var s []string
	for _, g := range h.cfg.Groups {
		s = append(s, g.Name)
	}
	return strings.Join(s, ", ")
}

// Groups returns the groups in configuration order.
func (h *Hub) Groups() []*Group {
	var gs []*Group
	for _, gc := range h.cfg.Groups {
		gs = append(gs, h.groups[gc.Name])
	}
	return gs
}
