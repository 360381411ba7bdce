package serve

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/internal/tomlin"
	"github.com/openenoc/oetp/memspec"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// This file holds the settings of `oetp serve`: the parsers of its flag
// arguments (--peer, --raw-policy, windows) and the TOML configuration file;
// the command merges the flags over the file.

// WholeSpace is the size of the whole 32-bit address space, the default
// window of a peer.
const WholeSpace = uint64(1) << 32

// modeNames are the --peer mode names, indexed by endpoint.Mode.
var modeNames = [...]string{"none", "rmem", "dma-write", "dma-read"}

// parseMode accepts none, rmem, dma-write, dma-read (either case, '_' for
// '-') or a number 0..3.
func parseMode(s string) (endpoint.Mode, error) {
	t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
	if i := slices.Index(modeNames[:], t); i >= 0 {
		return endpoint.Mode(i), nil
	}
	if n, err := strconv.ParseUint(t, 10, 8); err == nil && n <= 3 {
		return endpoint.Mode(n), nil
	}
	return 0, fmt.Errorf("mode %q is not none, rmem, dma-write, dma-read or 0..3", s)
}

// rawPolicyNames are the --raw-policy names, indexed by endpoint.RawPolicy.
var rawPolicyNames = [...]string{"drop", "filtered", "multicast", "promiscuous"}

// ParseRawPolicy parses a --raw-policy name.
func ParseRawPolicy(s string) (endpoint.RawPolicy, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if i := slices.Index(rawPolicyNames[:], t); i >= 0 {
		return endpoint.RawPolicy(i), nil
	}
	return 0, fmt.Errorf("%q is not drop, filtered, multicast or promiscuous", s)
}

// parseWindow parses "BASE:SIZE" with the number syntax of --region
// (decimal or 0x hex, optional K, M or G suffix).
func parseWindow(s string) (base uint32, size uint64, err error) {
	if strings.Count(s, ":") != 1 {
		return 0, 0, fmt.Errorf("window %q is not BASE:SIZE, e.g. window=0x100000:64K", s)
	}
	r, err := memspec.ParseRegion(s)
	if err != nil {
		var se *memspec.SpecError
		if errors.As(err, &se) && se.Part != "" {
			return 0, 0, fmt.Errorf("window %q: %s %s, e.g. window=0x100000:64K", s, se.Part, se.Reason)
		}
		return 0, 0, fmt.Errorf("window %q is not BASE:SIZE, e.g. window=0x100000:64K", s)
	}
	return r.Base, r.Size, nil
}

// peerExample is a correct --peer argument, quoted in error messages.
const peerExample = "02:0e:0c:00:00:02,mode=rmem,window=0:64K"

// SplitTransport takes the transport=v1|reliable|auto key out of a --peer
// argument: the reliable transport is configured beneath the endpoint
// (link/rlink), not in its peer entry. The rest goes to ParsePeer.
func SplitTransport(s string) (rest string, m node.Transport, err error) {
	parts := strings.Split(s, ",")
	keep := parts[:1]
	seen := false
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ToLower(strings.TrimSpace(k)) != "transport" {
			keep = append(keep, kv)
			continue
		}
		if seen {
			return "", node.V1, fmt.Errorf("%q: transport given twice", s)
		}
		seen = true
		if m, err = node.ParseTransport(strings.ToLower(strings.TrimSpace(v))); err != nil {
			return "", node.V1, fmt.Errorf("%q: %v", s, err)
		}
	}
	return strings.Join(keep, ","), m, nil
}

// OnlyIfUsed returns m, or nil when every peer is v1 (the transport unused).
func OnlyIfUsed(m []node.Transport) []node.Transport {
	for _, x := range m {
		if x != node.V1 {
			return m
		}
	}
	return nil
}

// ParsePeer parses a --peer argument "MAC,mode=M[,window=BASE:SIZE][,events=on|off]".
// The window defaults to the whole 4 GiB address space; events (the peer's
// PEER_DMA_COMPLETE enable) default to on.
func ParsePeer(s string) (endpoint.Peer, error) {
	parts := strings.Split(s, ",")
	mac, err := wire.ParseMAC(strings.TrimSpace(parts[0]))
	if err != nil {
		return endpoint.Peer{}, fmt.Errorf("%q: the first field must be the peer's MAC: %v (e.g. %s)", s, err, peerExample)
	}
	if mac.IsZero() {
		return endpoint.Peer{}, fmt.Errorf("%q: the zero MAC marks an unused entry; give the peer's address (e.g. %s)", s, peerExample)
	}
	p := endpoint.Peer{MAC: mac, WindowSize: WholeSpace, EventEnable: true}
	seen := map[string]bool{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok {
			return endpoint.Peer{}, fmt.Errorf("%q: %q is not KEY=VALUE (keys: mode, window, events, transport; e.g. %s)", s, kv, peerExample)
		}
		if seen[k] {
			return endpoint.Peer{}, fmt.Errorf("%q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "mode":
			if p.Mode, err = parseMode(v); err != nil {
				return endpoint.Peer{}, fmt.Errorf("%q: %v", s, err)
			}
		case "window":
			if p.WindowBase, p.WindowSize, err = parseWindow(strings.TrimSpace(v)); err != nil {
				return endpoint.Peer{}, fmt.Errorf("%q: %v", s, err)
			}
		case "events":
			if p.EventEnable, err = parseOnOff(v); err != nil {
				return endpoint.Peer{}, fmt.Errorf("%q: events: %v", s, err)
			}
		default:
			return endpoint.Peer{}, fmt.Errorf("%q: unknown key %q (keys: mode, window, events, transport; e.g. %s)", s, k, peerExample)
		}
	}
	if !seen["mode"] {
		return endpoint.Peer{}, fmt.Errorf("%q: mode is missing: add ,mode=none|rmem|dma-write|dma-read (e.g. %s)", s, peerExample)
	}
	return p, nil
}

func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not on or off", s)
}

// FormatPeer is the inverse of ParsePeer, for logs.
func FormatPeer(p endpoint.Peer) string {
	ev := "on"
	if !p.EventEnable {
		ev = "off"
	}
	return fmt.Sprintf("%s,mode=%s,window=0x%x:0x%x,events=%s", p.MAC, modeNames[p.Mode&3], p.WindowBase, p.WindowSize, ev)
}

// Settings are the settings of `oetp serve` once the configuration file
// and the flags have been merged and parsed.
type Settings struct {
	Iface   string
	MAC     wire.MAC // zero: the interface's
	Group   wire.MAC
	Regions []memspec.RegionSpec
	Faults  []memspec.FaultSpec
	Peers   []endpoint.Peer
	// PeerTransport is each peer's transport=, by the index of Peers.
	PeerTransport []node.Transport
	Contexts      int
	MaxFrame      int // zero: min(8192, MTU+14)
	RawPolicy     endpoint.RawPolicy
	RMEMTimeout   time.Duration
	DMATimeout    time.Duration
	Pcap          string
	PcapFormat    node.CaptureFormat
	BusyPoll      time.Duration
	Placement     cli.Placement
	JSONEvents    bool
	MaxReadRate   int64 // bytes per second per source; 0: no bound
}

// Place is serve's placement: follow the traffic, unless off or a peer is
// reached by the reliable transport (or may be: auto). Its window keeps
// requests in flight, so serve and its client work at the same time: on
// one CPU they would take turns.
func (s *Settings) Place() node.Placement {
	if s.Placement == cli.PlaceOff {
		return node.PlaceNone
	}
	for _, t := range s.PeerTransport {
		if t != node.V1 {
			return node.PlaceNone
		}
	}
	return node.PlaceFollow
}

// File is the TOML configuration file of `oetp serve`. Every key is the
// name of the flag with '-' written '_'; list flags become arrays of tables.
type File struct {
	Iface       *string      `toml:"iface"`
	MAC         *string      `toml:"mac"`
	Group       *string      `toml:"group"`
	Region      []fileRegion `toml:"region"`
	Fault       []fileFault  `toml:"fault"`
	Peer        []filePeer   `toml:"peer"`
	Contexts    *fileNum     `toml:"contexts"`
	MaxFrame    *fileNum     `toml:"max_frame"`
	RawPolicy   *string      `toml:"raw_policy"`
	RMEMTimeout *string      `toml:"rmem_timeout"`
	DMATimeout  *string      `toml:"dma_timeout"`
	Pcap        *string      `toml:"pcap"`
	PcapFormat  *string      `toml:"pcap_format"`
	BusyPoll    *string      `toml:"busy_poll"`
	Placement   *string      `toml:"placement"`
	JSONEvents  *bool        `toml:"json_events"`
	MaxReadRate *fileNum     `toml:"max_read_rate"`
}

type fileRegion struct {
	Base *fileNum `toml:"base"`
	Size *fileNum `toml:"size"`
	Path string   `toml:"path"`
}

type fileFault struct {
	Base *fileNum `toml:"base"`
	Size *fileNum `toml:"size"`
	Resp string   `toml:"resp"`
}

type filePeer struct {
	MAC       string  `toml:"mac"`
	Mode      *string `toml:"mode"`
	Window    string  `toml:"window"`
	Events    *bool   `toml:"events"`
	Transport string  `toml:"transport"`
}

// fileNum is a number in the configuration file: a TOML integer (0x hex
// allowed by TOML) or a string in the flag syntax ("64K", "0x1000").
type fileNum struct{ s string }

// UnmarshalTOML implements toml.Unmarshaler.
func (n *fileNum) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("%d is negative", v)
		}
		n.s = strconv.FormatInt(v, 10)
	case string:
		n.s = v
	default:
		return fmt.Errorf("%v is not a number: write an integer (4096, 0x1000) or a string (\"4K\")", v)
	}
	return nil
}

// int parses the number as a non-negative int.
func (n *fileNum) int() (int, error) {
	v, err := num.ParseMax(n.s, math.MaxInt32)
	return int(v), err
}

// LoadFile reads and decodes the configuration file strictly: an
// unknown key is an error.
func LoadFile(path string) (*File, error) {
	b, err := tomlin.ReadFile(path)
	if err != nil {
		return nil, cli.Usagef("--config %s", cli.FileWords(err))
	}
	var f File
	md, err := tomlin.Decode(path, b, &f)
	var le *tomlin.LimitError
	if errors.As(err, &le) {
		return nil, cli.Usagef("--config: %v", err)
	}
	if err != nil {
		return nil, cli.Usagef("--config %s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, cli.Usagef("--config %s: unknown key %q: the keys are the serve flags with '_' for '-' (iface, mac, group, [[region]], [[fault]], [[peer]], contexts, max_frame, raw_policy, rmem_timeout, dma_timeout, pcap, pcap_format, busy_poll, placement, json_events, max_read_rate)", path, und[0].String())
	}
	return &f, nil
}

// Apply copies the file's settings into s.
func (f *File) Apply(s *Settings, where func(string) string) error {
	if f.Iface != nil {
		s.Iface = *f.Iface
	}
	var err error
	if f.MAC != nil {
		if s.MAC, err = wire.ParseMAC(*f.MAC); err != nil {
			return cli.Usagef("%s: %v", where("mac"), err)
		}
	}
	if f.Group != nil {
		if s.Group, err = wire.ParseMAC(*f.Group); err != nil {
			return cli.Usagef("%s: %v", where("group"), err)
		}
	}
	for i, r := range f.Region {
		key := fmt.Sprintf("[[region]] #%d", i+1)
		if r.Base == nil || r.Size == nil {
			return cli.Usagef("%s needs base and size, e.g. base = 0x0, size = \"64K\"", where(key))
		}
		arg := r.Base.s + ":" + r.Size.s
		if r.Path != "" {
			arg += ":" + r.Path
		}
		spec, err := memspec.ParseRegion(arg)
		if err != nil {
			return cli.Usagef("%s: %s", where(key), specReason(err))
		}
		s.Regions = append(s.Regions, spec)
	}
	for i, r := range f.Fault {
		key := fmt.Sprintf("[[fault]] #%d", i+1)
		if r.Base == nil || r.Size == nil || r.Resp == "" {
			return cli.Usagef("%s needs base, size and resp, e.g. base = 0x200000, size = 4096, resp = \"slverr\"", where(key))
		}
		spec, err := memspec.ParseFault(r.Base.s + ":" + r.Size.s + ":" + r.Resp)
		if err != nil {
			return cli.Usagef("%s: %s", where(key), specReason(err))
		}
		s.Faults = append(s.Faults, spec)
	}
	for i, p := range f.Peer {
		key := fmt.Sprintf("[[peer]] #%d", i+1)
		if p.MAC == "" || p.Mode == nil {
			return cli.Usagef("%s needs mac and mode, e.g. mac = \"02:0e:0c:00:00:02\", mode = \"rmem\"", where(key))
		}
		arg := p.MAC + ",mode=" + *p.Mode
		if p.Window != "" {
			arg += ",window=" + p.Window
		}
		if p.Events != nil {
			arg += ",events=" + strconv.FormatBool(*p.Events)
		}
		tm := node.V1
		if p.Transport != "" {
			if tm, err = node.ParseTransport(p.Transport); err != nil {
				return cli.Usagef("%s: %v", where(key), err)
			}
		}
		peer, err := ParsePeer(arg)
		if err != nil {
			return cli.Usagef("%s: %v", where(key), err)
		}
		s.Peers = append(s.Peers, peer)
		s.PeerTransport = append(s.PeerTransport, tm)
	}
	s.PeerTransport = OnlyIfUsed(s.PeerTransport)
	if f.Contexts != nil {
		if s.Contexts, err = f.Contexts.int(); err != nil {
			return cli.Usagef("%s: %v", where("contexts"), err)
		}
		if s.Contexts == 0 {
			return cli.Usagef("%s = 0 is out of range: use 1..%d (leave it out for 1)", where("contexts"), endpoint.MaxContexts)
		}
	}
	if f.MaxFrame != nil {
		if s.MaxFrame, err = f.MaxFrame.int(); err != nil {
			return cli.Usagef("%s: %v", where("max_frame"), err)
		}
		if s.MaxFrame == 0 {
			return cli.Usagef("%s = 0 is out of range: use 36..8192, or leave it out for min(8192, MTU+14)", where("max_frame"))
		}
	}
	if f.MaxReadRate != nil {
		n, err := f.MaxReadRate.int()
		if err != nil {
			return cli.Usagef("%s: %v (bytes per second, such as \"16M\"; 0 sets no bound)", where("max_read_rate"), err)
		}
		s.MaxReadRate = int64(n)
	}
	if f.RawPolicy != nil {
		if s.RawPolicy, err = ParseRawPolicy(*f.RawPolicy); err != nil {
			return cli.Usagef("%s: %v", where("raw_policy"), err)
		}
	}
	if f.RMEMTimeout != nil {
		if s.RMEMTimeout, err = time.ParseDuration(*f.RMEMTimeout); err != nil {
			return cli.Usagef("%s: %q is not a duration: write one such as \"1s\" or \"250ms\" (\"0\" waits forever)", where("rmem_timeout"), *f.RMEMTimeout)
		}
	}
	if f.DMATimeout != nil {
		if s.DMATimeout, err = time.ParseDuration(*f.DMATimeout); err != nil {
			return cli.Usagef("%s: %q is not a duration: write one such as \"1s\" or \"250ms\" (\"0\" waits forever)", where("dma_timeout"), *f.DMATimeout)
		}
	}
	if f.Pcap != nil {
		s.Pcap = *f.Pcap
	}
	if f.PcapFormat != nil {
		if s.PcapFormat, err = node.ParseCaptureFormat(*f.PcapFormat); err != nil {
			return cli.Usagef("%s: %v", where("pcap_format"), err)
		}
	}
	if f.BusyPoll != nil {
		if s.BusyPoll, err = time.ParseDuration(*f.BusyPoll); err != nil {
			return cli.Usagef("%s: %q is not a duration: write one such as \"50us\" (\"0\" never spins)", where("busy_poll"), *f.BusyPoll)
		}
	}
	if f.Placement != nil {
		if s.Placement, err = cli.ParsePlacement(*f.Placement); err != nil {
			return cli.Usagef("%s: %v", where("placement"), err)
		}
	}
	if f.JSONEvents != nil {
		s.JSONEvents = *f.JSONEvents
	}
	return nil
}

// specReason turns a memspec.SpecError into "PART: reason" without the flag
// name, for configuration file messages.
func specReason(err error) string {
	var se *memspec.SpecError
	if errors.As(err, &se) {
		if se.Part != "" {
			return strings.ToLower(se.Part) + ": " + se.Reason
		}
		return se.Reason
	}
	return err.Error()
}

// Check validates the merged settings; each message names the flag.
func (s *Settings) Check() error {
	switch {
	case s.Iface == "":
		return cli.Usagef("--iface is required: name the network interface to serve on (or set iface in --config)")
	case s.MAC.IsGroup():
		return cli.Usagef("--mac %v is a group address: an endpoint's own address must be unicast (bit 0 of the first octet clear)", s.MAC)
	case !s.Group.IsZero() && !s.Group.IsGroup():
		return cli.Usagef("--group %v is not a group address: set bit 0 of the first octet, e.g. 03:0e:0c:00:00:01", s.Group)
	case s.Contexts < 0 || s.Contexts > endpoint.MaxContexts:
		return cli.Usagef("--contexts %d is out of range: use 1..%d", s.Contexts, endpoint.MaxContexts)
	case s.RMEMTimeout < 0:
		return cli.Usagef("--rmem-timeout must not be negative: use 0 to wait forever")
	case s.DMATimeout < 0:
		return cli.Usagef("--dma-timeout must not be negative: use 0 to wait forever")
	case cli.CheckBusyPoll(s.BusyPoll) != nil:
		return cli.CheckBusyPoll(s.BusyPoll)
	case len(s.Peers) > endpoint.MaxPeers:
		return cli.Usagef("--peer given %d times: the peer table has %d entries", len(s.Peers), endpoint.MaxPeers)
	}
	if s.MaxFrame != 0 {
		if err := wire.CheckMaxFrame(s.MaxFrame); err != nil {
			return cli.Usagef("--max-frame: %v", err)
		}
	}
	// A MAC may have several entries, as in the hardware's table (the
	// lowest enabled one serves its requests), but one transport.
	tr := func(i int) node.Transport {
		if i < len(s.PeerTransport) {
			return s.PeerTransport[i]
		}
		return node.V1
	}
	for i, p := range s.Peers {
		for j := range i {
			if s.Peers[j].MAC == p.MAC && !p.MAC.IsGroup() && tr(i) != tr(j) {
				return cli.Usagef("--peer %v appears in entries %d and %d with different transports: give both the same transport=", p.MAC, j, i)
			}
		}
	}
	return nil
}
