package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openenoc/oetp/internal/oserr"
	"github.com/openenoc/oetp/internal/tomlin"
	"github.com/openenoc/oetp/memspec"
	"github.com/openenoc/oetp/wire"
)

// Mode is a peer's access mode as the device under test has it programmed.
type Mode uint8

// The four peer modes of the specification's peer access policy.
const (
	ModeNone     Mode = 0 // none: no incoming request is permitted
	ModeRMEM     Mode = 1 // rmem: RMEM reads and writes
	ModeDMAWrite Mode = 2 // dma-write: incoming DMA writes
	ModeDMARead  Mode = 3 // dma-read: incoming DMA reads
)

var modeNames = [...]string{"none", "rmem", "dma-write", "dma-read"}

// String returns the DUT file's name of m: none, rmem, dma-write, dma-read.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Range is a byte range [Base, Base+Size) of the device's address space.
type Range struct {
	Base uint32
	Size uint64
}

// End returns Base+Size, computed in 64 bits.
func (r Range) End() uint64 { return uint64(r.Base) + r.Size }

// Contains reports whether [addr, addr+n) lies inside r.
func (r Range) Contains(addr uint32, n uint64) bool {
	return addr >= r.Base && uint64(addr)+n <= r.End()
}

// Overlaps reports whether [addr, addr+n) shares a byte with r.
func (r Range) Overlaps(addr uint32, n uint64) bool {
	return uint64(addr) < r.End() && uint64(addr)+n > uint64(r.Base)
}

// String returns r as "0xBASE:0xSIZE".
func (r Range) String() string { return fmt.Sprintf("%#x:%#x", r.Base, r.Size) }

// Peer is one peer table entry of the device under test: the runner sends
// that peer's requests from MAC.
type Peer struct {
	MAC    wire.MAC
	Mode   Mode
	Window Range // the device's local window for the peer's requests
}

// DUT describes how the device under test is programmed: what the runner
// may expect of it. The runner treats every window address outside SlvErr
// and DecErr as read/write memory (scratch it may overwrite).
type DUT struct {
	// MaxFrame is the device's frame ceiling MAX_RAW_FRAME_SIZE in bytes
	// without FCS (max_frame; 0: not given).
	MaxFrame int
	// Group is the device's multicast address (group; zero: none).
	Group wire.MAC
	// Peers is the device's peer table ([[peer]]).
	Peers []Peer
	// SlvErr and DecErr are ranges whose accesses answer SLVERR and DECERR
	// (slverr, decerr).
	SlvErr []Range
	DecErr []Range
	// UnknownMAC is a unicast MAC that is not in the device's peer table
	// (unknown_mac; zero: not given).
	UnknownMAC wire.MAC
	// Trigger holds the commands that act on the device ([trigger]).
	Trigger Triggers
}

// Triggers are shell command lines (run with sh -c, in the runner's
// environment, so they may use variables such as $OETP_RTLSIM) that act on
// the device: placeholders in braces are replaced by the case's values
// before the line runs. A command prints its result as key=value words
// (done=1 error=0 error_code=N rd_data=0x...); its exit status alone never
// decides a verdict. An empty command: the cases that need it are skipped.
type Triggers struct {
	// SetPeer rewrites peer table entry {index} (0-based, the order of
	// [[peer]]) to {mac}, {mode} (0..3), window {base} + {size}
	// (set_peer). The runner restores the entry after the case.
	SetPeer string
	// RMEMRead and RMEMWrite make the device read or write the word at
	// {addr} of the runner's memory (rmem_read, rmem_write, also {data}
	// and {mask}) by RMEM, toward Initiator.MAC.
	RMEMRead  string
	RMEMWrite string
	// DMAWrite makes the device DMA-write {length} bytes of its local
	// memory at {local} to {addr} of the runner's memory at {mac}
	// (dma_write: the device's entry for {mac} in mode 3); DMARead makes
	// it DMA-read {length} bytes at {addr} of the runner's memory into
	// its local memory at {local} (dma_read: mode 2).
	DMAWrite string
	DMARead  string
	// Status prints the last operation's result, when the trigger itself
	// returns before the device has finished (status).
	Status string
	// Setup runs once before the initiator cases (setup), e.g. to shorten
	// the device's response timeouts to Timeout.
	Setup string
	// TimeoutOff sets the device's response timeouts to zero (wait
	// forever) and TimeoutOn sets them back (timeout_off, timeout_on).
	TimeoutOff string
	TimeoutOn  string
	// TimeoutShort sets the device's DMA response timeout shorter than
	// sending one DMA_WRITE_REQ of the largest fragment takes, yet longer
	// than the runner needs to answer (timeout_short; timeout_on sets it
	// back).
	TimeoutShort string
	// SetRequestID presets the device's Request ID counter to {rid}
	// (set_request_id), for the wrap from 0xffffffff to 0.
	SetRequestID string
	// MAC is the address the device's requests go to: the runner plays
	// that peer (mac; default the first rmem peer's MAC).
	MAC wire.MAC
	// Timeout is about how long the device waits for a response with its
	// timeouts as Setup leaves them (timeout, default 1s); Wait bounds
	// each trigger command (wait, default 60s).
	Timeout time.Duration
	Wait    time.Duration
}

// dutFile is the TOML form of a DUT file.
type dutFile struct {
	MaxFrame   *int64     `toml:"max_frame"`
	Group      string     `toml:"group"`
	Peer       []dutPeer  `toml:"peer"`
	SlvErr     stringList `toml:"slverr"`
	DecErr     stringList `toml:"decerr"`
	UnknownMAC string     `toml:"unknown_mac"`
	Trigger    dutTrigger `toml:"trigger"`
}

type dutTrigger struct {
	SetPeer      string `toml:"set_peer"`
	RMEMRead     string `toml:"rmem_read"`
	RMEMWrite    string `toml:"rmem_write"`
	DMAWrite     string `toml:"dma_write"`
	DMARead      string `toml:"dma_read"`
	Status       string `toml:"status"`
	Setup        string `toml:"setup"`
	TimeoutOff   string `toml:"timeout_off"`
	TimeoutOn    string `toml:"timeout_on"`
	TimeoutShort string `toml:"timeout_short"`
	SetRequestID string `toml:"set_request_id"`
	MAC          string `toml:"mac"`
	Timeout      string `toml:"timeout"`
	Wait         string `toml:"wait"`
}

type dutPeer struct {
	MAC    string `toml:"mac"`
	Mode   string `toml:"mode"`
	Window string `toml:"window"`
}

// stringList is a TOML string or array of strings.
type stringList []string

// UnmarshalTOML implements toml.Unmarshaler.
func (l *stringList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*l = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("%v is not a string: write \"BASE:SIZE\", e.g. \"0x200000:4K\"", e)
			}
			*l = append(*l, s)
		}
	default:
		return fmt.Errorf("%v is not a string or an array of strings: write \"BASE:SIZE\" or [\"BASE:SIZE\", ...]", v)
	}
	return nil
}

// LoadDUT reads a DUT file; see ParseDUT.
func LoadDUT(path string) (*DUT, error) {
	b, err := tomlin.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, oserr.Reason(err))
	}
	d, err := parseDUT(path, string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// ParseDUT parses the TOML text of a DUT file (see Template). Unknown keys
// are errors, and every error names the key and the fix.
func ParseDUT(text string) (*DUT, error) { return parseDUT("DUT file", text) }

// parseDUT is ParseDUT for the file named name (in a refusal of its size or
// nesting).
func parseDUT(name, text string) (*DUT, error) {
	var f dutFile
	md, err := tomlin.Decode(name, []byte(text), &f)
	var le *tomlin.LimitError
	if errors.As(err, &le) {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("unknown key %q; the keys are max_frame, group, unknown_mac, slverr, decerr, [[peer]] tables with mac, mode and window, and a [trigger] table with set_peer, rmem_read, rmem_write, dma_write, dma_read, status, setup, timeout_off, timeout_on, timeout_short, set_request_id, mac, timeout and wait", und[0].String())
	}
	d := &DUT{}
	if f.MaxFrame != nil {
		if err := wire.CheckMaxFrame(int(*f.MaxFrame)); err != nil || *f.MaxFrame > wire.MaxFrameLen {
			return nil, fmt.Errorf("max_frame %d: use the device's MAX_RAW_FRAME_SIZE, %d..%d bytes without FCS", *f.MaxFrame, wire.MinMaxFrameLen, wire.MaxFrameLen)
		}
		d.MaxFrame = int(*f.MaxFrame)
	}
	if f.Group != "" {
		g, err := wire.ParseMAC(f.Group)
		if err != nil || !g.IsGroup() {
			return nil, fmt.Errorf("group %q is not a group MAC: set bit 0 of the first octet, e.g. \"03:0e:0c:00:00:01\", or leave group out", f.Group)
		}
		d.Group = g
	}
	if f.UnknownMAC != "" {
		m, err := wire.ParseMAC(f.UnknownMAC)
		if err != nil || m.IsGroup() || m.IsZero() {
			return nil, fmt.Errorf("unknown_mac %q is not a unicast MAC, e.g. \"02:0e:0c:00:00:77\"", f.UnknownMAC)
		}
		d.UnknownMAC = m
	}
	for _, s := range f.SlvErr {
		r, err := parseRange("slverr", s)
		if err != nil {
			return nil, err
		}
		d.SlvErr = append(d.SlvErr, r)
	}
	for _, s := range f.DecErr {
		r, err := parseRange("decerr", s)
		if err != nil {
			return nil, err
		}
		d.DecErr = append(d.DecErr, r)
	}
	seen := map[wire.MAC]int{}
	for i, fp := range f.Peer {
		where := fmt.Sprintf("[[peer]] #%d", i+1)
		m, err := wire.ParseMAC(fp.MAC)
		if err != nil || m.IsGroup() || m.IsZero() {
			return nil, fmt.Errorf("%s: mac %q is not a unicast MAC: the runner sends this peer's requests from it, e.g. \"02:0e:0c:00:00:a0\"", where, fp.MAC)
		}
		if _, dup := seen[m]; !dup {
			seen[m] = i // several entries may share a MAC, as in the hardware's table
		}
		p := Peer{MAC: m, Window: Range{Base: 0, Size: 1 << 32}}
		switch strings.ToLower(strings.TrimSpace(fp.Mode)) {
		case "none", "0":
			p.Mode = ModeNone
		case "rmem", "1":
			p.Mode = ModeRMEM
		case "dma-write", "2":
			p.Mode = ModeDMAWrite
		case "dma-read", "3":
			p.Mode = ModeDMARead
		default:
			return nil, fmt.Errorf("%s: mode %q: use none, rmem, dma-write or dma-read", where, fp.Mode)
		}
		if fp.Window != "" {
			if p.Window, err = parseRange(where+": window", fp.Window); err != nil {
				return nil, err
			}
		}
		d.Peers = append(d.Peers, p)
	}
	tr := f.Trigger
	d.Trigger = Triggers{SetPeer: tr.SetPeer, RMEMRead: tr.RMEMRead, RMEMWrite: tr.RMEMWrite, DMAWrite: tr.DMAWrite, DMARead: tr.DMARead,
		Status: tr.Status, Setup: tr.Setup, TimeoutOff: tr.TimeoutOff, TimeoutOn: tr.TimeoutOn,
		TimeoutShort: tr.TimeoutShort, SetRequestID: tr.SetRequestID, Timeout: time.Second, Wait: time.Minute}
	if tr.MAC != "" {
		m, err := wire.ParseMAC(tr.MAC)
		if err != nil || m.IsGroup() || m.IsZero() {
			return nil, fmt.Errorf("[trigger] mac %q is not a unicast MAC: the address the device's requests go to, e.g. \"02:0e:0c:00:00:a0\"", tr.MAC)
		}
		d.Trigger.MAC = m
	} else if p, ok := d.peer(ModeRMEM); ok {
		d.Trigger.MAC = p.MAC
	}
	for _, x := range []struct {
		key, v string
		dst    *time.Duration
	}{{"timeout", tr.Timeout, &d.Trigger.Timeout}, {"wait", tr.Wait, &d.Trigger.Wait}} {
		if x.v == "" {
			continue
		}
		v, err := time.ParseDuration(x.v)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("[trigger] %s %q: give a positive duration such as \"2s\"", x.key, x.v)
		}
		*x.dst = v
	}
	if !d.UnknownMAC.IsZero() {
		if _, known := seen[d.UnknownMAC]; known {
			return nil, fmt.Errorf("unknown_mac %v is a [[peer]]: give a MAC the device does not know", d.UnknownMAC)
		}
	}
	return d, nil
}

func parseRange(key, s string) (Range, error) {
	r, err := memspec.ParseRegion(s)
	if err == nil && r.Path != "" {
		err = fmt.Errorf("has a third part %q", r.Path)
	}
	if err != nil {
		return Range{}, fmt.Errorf("%s %q: write \"BASE:SIZE\", e.g. \"0x100000:1M\": %v", key, s, err)
	}
	return Range{Base: r.Base, Size: r.Size}, nil
}

// peer returns the first peer with mode m whose requests that entry
// serves: the lowest-index entry with its MAC that is not in mode none
// (for ModeNone, a MAC that no enabled entry has).
func (d *DUT) peer(m Mode) (Peer, bool) {
	for i, p := range d.Peers {
		if p.Mode == m && d.serving(p.MAC) == i {
			return p, true
		}
	}
	return Peer{}, false
}

// serving returns the index of the entry that serves mac's requests (the
// lowest enabled one, else the lowest one), -1 for none.
func (d *DUT) serving(mac wire.MAC) int {
	first := -1
	for i, p := range d.Peers {
		if p.MAC != mac {
			continue
		}
		if p.Mode != ModeNone {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// faulty reports whether [addr, addr+n) touches a SLVERR or DECERR range.
func (d *DUT) faulty(addr uint32, n uint64) bool {
	for _, r := range append(append([]Range(nil), d.SlvErr...), d.DecErr...) {
		if r.Overlaps(addr, n) {
			return true
		}
	}
	return false
}

// Template is the commented DUT file that `oetp conformance dut-template`
// prints. It describes a device that `oetp serve` becomes with
// TemplateServeArgs.
const Template = `# oetp conformance DUT file: how the device under test is programmed.
#
# The runner sends each peer's requests from that peer's MAC and checks the
# device's replies. It treats every window address outside slverr and
# decerr as read/write scratch memory: it writes there and reads back.
# A case that needs a key this file lacks is skipped and names the key.
#
# This file describes a software endpoint started with
#
#   oetp serve --iface IF --group 03:0e:0c:00:00:01 --max-frame 8192 \
#     --region 0:2M --fault 0x200000:4K:slverr --fault 0x201000:4K:decerr \
#     --peer 02:0e:0c:00:00:a0,mode=rmem,window=0:0x202000 \
#     --peer 02:0e:0c:00:00:a1,mode=dma-write,window=0x100000:0x102000 \
#     --peer 02:0e:0c:00:00:a2,mode=dma-read,window=0x100000:0x102000 \
#     --peer 02:0e:0c:00:00:a3,mode=none,window=0:64K
#
# and checked from another interface on the same link with
#
#   oetp conformance run --iface IF2 --target MAC-OF-IF --dut dut.toml

# MAX_RAW_FRAME_SIZE, bytes without FCS (36..8192): the DMA fragment
# ceiling is 4*floor((max_frame-32)/4).
max_frame = 8192

# The device's multicast address (conf.multicast_address); leave it out
# when group reception is disabled.
group = "03:0e:0c:00:00:01"

# A unicast MAC the device's peer table does not hold.
unknown_mac = "02:0e:0c:00:00:77"

# Ranges whose accesses answer SLVERR and DECERR ("BASE:SIZE", or a list of
# them). Put them inside the windows of the peers below so that the
# bus-error cases can reach them.
slverr = "0x200000:4K"
decerr = "0x201000:4K"

# The peer table: mac, mode (none, rmem, dma-write, dma-read) and window
# ("BASE:SIZE", the local range the peer's requests may access; default the
# whole 4 GiB space).
[[peer]]
mac = "02:0e:0c:00:00:a0"
mode = "rmem"
window = "0:0x202000"

[[peer]]
mac = "02:0e:0c:00:00:a1"
mode = "dma-write"
window = "0x100000:0x102000"

[[peer]]
mac = "02:0e:0c:00:00:a2"
mode = "dma-read"
window = "0x100000:0x102000"

[[peer]]
mac = "02:0e:0c:00:00:a3"
mode = "none"
window = "0:64K"
`

// TemplateServeArgs are the `oetp serve` arguments (after --iface IF) that
// program a software endpoint to match Template.
var TemplateServeArgs = []string{
	"--group", "03:0e:0c:00:00:01", "--max-frame", "8192",
	"--region", "0:2M", "--fault", "0x200000:4K:slverr", "--fault", "0x201000:4K:decerr",
	"--peer", "02:0e:0c:00:00:a0,mode=rmem,window=0:0x202000",
	"--peer", "02:0e:0c:00:00:a1,mode=dma-write,window=0x100000:0x102000",
	"--peer", "02:0e:0c:00:00:a2,mode=dma-read,window=0x100000:0x102000",
	"--peer", "02:0e:0c:00:00:a3,mode=none,window=0:64K",
}
