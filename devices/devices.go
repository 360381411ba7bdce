// Package devices reads the devices file: the boards a user reaches by
// name, with the interface facing each, its MAC, this host's three role
// MACs, its transport, timeout and address table. The CLI (--device NAME),
// the hub (devices = "FILE" in its config, or oetp hub --devices FILE) and
// the Python client (python/oetp/devices.py) read the same file:
//
//	[device.board1]
//	iface = "eth1"
//	mac = "02:0e:0c:00:00:02"          # the board
//	local_mac = "02:0e:0c:00:01:00"    # seed of this host's role MACs (default: mac)
//	# or the role MACs given one by one:
//	# rmem_mac = "...", dma_write_mac = "...", dma_read_mac = "..."
//	transport = "v1"                   # or "reliable" / "auto"
//	timeout = "250ms"
//	address_table = "board1.xml"       # relative to the devices file
//
// The file is found through --devices FILE, else $OETP_DEVICES, else
// $XDG_CONFIG_HOME/oetp/devices.toml, else ~/.config/oetp/devices.toml
// (see Find).
//
// # Role MACs
//
// A v1 peer entry has one mode, so RMEM, DMA writes and DMA reads to one
// board take three local MACs. Those not given one by one are derived by
// DeriveMAC from local_mac (or, without it, from the board's mac), the
// device's name and the role: the function the hub uses for its own local
// MACs, so a hub reading this file uses the same three MACs, and the
// board's peer table serves both (oetp devices peer-entries prints it).
package devices

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/openenoc/oetp/internal/tomlin"
	"github.com/openenoc/oetp/wire"
)

// Env is the environment variable naming the devices file.
const Env = "OETP_DEVICES"

// MaxFileSize bounds a devices file.
const MaxFileSize = 1 << 20

// MaxDevices bounds the devices of one file.
const MaxDevices = 4096

// DefaultTimeout is a device's response timeout when the file gives none.
const DefaultTimeout = time.Second

// Role is the kind of operation a local MAC is used for; the hub's Kind
// has the same values.
type Role int

// The three roles, indexes into Device.Local.
const (
	RMEM     Role = 0 // RMEM reads and writes: the board's entry is mode rmem (1)
	DMAWrite Role = 1 // DMA writes to the board: its entry is mode dma-write (2)
	DMARead  Role = 2 // DMA reads from the board: its entry is mode dma-read (3)
	NumRoles      = 3
)

// String returns the role's key prefix: rmem, dma_write or dma_read.
func (r Role) String() string { return [...]string{"rmem", "dma_write", "dma_read"}[r] }

// BoardMode is the mode ("rmem", "dma-write", "dma-read") of the board's
// peer entry for this role's MAC, as oetp serve --peer spells it.
func (r Role) BoardMode() string { return [...]string{"rmem", "dma-write", "dma-read"}[r] }

// DeriveMAC is the local MAC of role r for the device called name, derived
// from seed (the device's local_mac, or its own MAC): a locally
// administered unicast address hashed from the seed, the name and the role,
// so it is the same on every start and differs between devices and roles.
// The hub derives its omitted local MACs with it too.
func DeriveMAC(seed wire.MAC, name string, r Role) wire.MAC {
	h := fnv.New64a()
	h.Write(seed[:])
	h.Write([]byte(name))
	h.Write([]byte{0, byte(r)})
	s := h.Sum64()
	var m wire.MAC
	for i := range m {
		m[i] = byte(s >> (8 * i))
	}
	m[0] = m[0]&^0x03 | 0x02 // unicast, locally administered
	return m
}

// Device is one [device.NAME] table.
type Device struct {
	Name  string
	Iface string
	// MAC is the board's own address.
	MAC wire.MAC
	// Local are this host's MACs by Role: given (rmem_mac...) or derived.
	Local [NumRoles]wire.MAC
	// Transport is "v1" (the default), "reliable" or "auto".
	Transport string
	// Timeout is the response timeout (DefaultTimeout when the file gives
	// none; 0 waits forever).
	Timeout time.Duration
	// AddressTable is the address table's path, resolved against the
	// devices file's directory; empty if none.
	AddressTable string
	// File and Line say where the device is defined.
	File string
	Line int
}

// File is a loaded devices file.
type File struct {
	Path    string
	Devices []Device // in name order
}

// Device returns the device called name; the error lists the names there are.
func (f *File) Device(name string) (Device, error) {
	for _, d := range f.Devices {
		if d.Name == name {
			return d, nil
		}
	}
	names := make([]string, len(f.Devices))
	for i, d := range f.Devices {
		names[i] = d.Name
	}
	if len(names) == 0 {
		return Device{}, fmt.Errorf("no device %q in %s: it defines none; add a [device.%s] table", name, f.Path, name)
	}
	return Device{}, fmt.Errorf("no device %q in %s: its devices are %s", name, f.Path, strings.Join(names, ", "))
}

// DefaultPath is the per-user devices file: $XDG_CONFIG_HOME/oetp/devices.toml,
// else ~/.config/oetp/devices.toml ("" if neither can be told).
func DefaultPath() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "oetp", "devices.toml")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".config", "oetp", "devices.toml")
	}
	return ""
}

// Find returns the devices file to read: flag (--devices) if given, else
// $OETP_DEVICES, else DefaultPath. how says which of them it is, for
// messages ("--devices", "$OETP_DEVICES", "the default").
func Find(flag string) (path, how string) {
	if flag != "" {
		return flag, "--devices"
	}
	if e := os.Getenv(Env); e != "" {
		return e, "$" + Env
	}
	return DefaultPath(), "the default " + DefaultPath()
}

// Error is a devices-file error: the file, the line (0 if unknown) and the
// message, which says what to change.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads the devices file at path.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the devices file: %v", unwrapPath(err))}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the devices file: %v", unwrapPath(err))}
	}
	if fi.IsDir() {
		return nil, &Error{File: path, Msg: "is a directory: give the devices file (TOML)"}
	}
	if err := checkOwner(fi); err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the devices file: %v", unwrapPath(err))}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("more than %d bytes: a devices file lists devices, not data", MaxFileSize)}
	}
	return Parse(path, data)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileDevice is one [device.NAME] table as written.
type fileDevice struct {
	Iface        string `toml:"iface"`
	MAC          string `toml:"mac"`
	LocalMAC     string `toml:"local_mac"`
	RMEMMAC      string `toml:"rmem_mac"`
	DMAWriteMAC  string `toml:"dma_write_mac"`
	DMAReadMAC   string `toml:"dma_read_mac"`
	Transport    string `toml:"transport"`
	Timeout      string `toml:"timeout"`
	AddressTable string `toml:"address_table"`
}

const keysHelp = "a [device.NAME] table has iface, mac, local_mac (or rmem_mac, dma_write_mac, dma_read_mac), transport, timeout, address_table"

// Parse reads a devices file's contents; name is the path used in errors
// and to resolve address_table.
func Parse(name string, data []byte) (*File, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var fc struct {
		Device map[string]fileDevice `toml:"device"`
	}
	md, err := tomlin.Decode(name, data, &fc)
	var le *tomlin.LimitError
	if errors.As(err, &le) {
		return nil, &Error{File: name, Line: le.Line, Msg: le.Reason()}
	}
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: name, Line: pe.Position.Line, Msg: "TOML: " + pe.Message}
		}
		return nil, &Error{File: name, Msg: "TOML: " + err.Error() + " (" + keysHelp + ")"}
	}
	lines := newLineIndex(data)
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		line := 0
		if len(k) >= 3 && k[0] == "device" {
			line = lines.key(k[1], k[len(k)-1])
		} else if len(k) >= 1 {
			line = lines.top(k[0])
		}
		return nil, &Error{File: name, Line: line, Msg: fmt.Sprintf("unknown key %q: %s", k.String(), keysHelp)}
	}
	if len(fc.Device) > MaxDevices {
		return nil, &Error{File: name, Msg: fmt.Sprintf("more than %d devices", MaxDevices)}
	}
	f := &File{Path: name}
	base := filepath.Dir(name)
	for dn, fd := range fc.Device {
		d, err := parseDevice(name, base, dn, fd, lines)
		if err != nil {
			return nil, err
		}
		f.Devices = append(f.Devices, d)
	}
	sort.Slice(f.Devices, func(i, j int) bool { return f.Devices[i].Name < f.Devices[j].Name })
	if err := check(f); err != nil {
		return nil, err
	}
	return f, nil
}

func parseDevice(file, base, name string, fd fileDevice, lines *lineIndex) (Device, error) {
	head := lines.header(name)
	errAt := func(key, format string, a ...any) error {
		line := head
		if key != "" {
			if l := lines.key(name, key); l > 0 {
				line = l
			}
		}
		return &Error{File: file, Line: line, Msg: fmt.Sprintf("device %q: ", name) + fmt.Sprintf(format, a...)}
	}
	d := Device{Name: name, File: file, Line: head, Iface: fd.Iface, Transport: "v1", Timeout: DefaultTimeout}
	if name == "" || len(name) > 255 || strings.ContainsAny(name, " \t\r\n\x00/\\") {
		return d, errAt("", "a device name is 1..255 bytes without spaces or slashes")
	}
	if fd.Iface == "" {
		return d, errAt("", "iface is missing: name the interface facing the board, e.g. iface = \"eth1\" (list them with `ip link`)")
	}
	if fd.MAC == "" {
		return d, errAt("", "mac is missing: give the board's MAC, e.g. mac = \"02:0e:0c:00:00:02\"")
	}
	var err error
	if d.MAC, err = wire.ParseMAC(fd.MAC); err != nil {
		return d, errAt("mac", "mac: %v", err)
	}
	if d.MAC.IsZero() || d.MAC.IsGroup() {
		return d, errAt("mac", "mac %v is not a unicast address: give the board's own MAC", d.MAC)
	}
	seed := d.MAC
	if fd.LocalMAC != "" {
		if seed, err = wire.ParseMAC(fd.LocalMAC); err != nil {
			return d, errAt("local_mac", "local_mac: %v", err)
		}
	}
	for r, s := range [NumRoles]string{fd.RMEMMAC, fd.DMAWriteMAC, fd.DMAReadMAC} {
		key := Role(r).String() + "_mac"
		if s == "" {
			d.Local[r] = DeriveMAC(seed, name, Role(r))
			continue
		}
		if d.Local[r], err = wire.ParseMAC(s); err != nil {
			return d, errAt(key, "%s: %v", key, err)
		}
		if d.Local[r].IsZero() || d.Local[r].IsGroup() {
			return d, errAt(key, "%s %v is not a unicast address: this host's MACs must be unicast", key, d.Local[r])
		}
		if d.Local[r] == d.MAC {
			return d, errAt(key, "%s %v is the board's own MAC: use another address", key, d.Local[r])
		}
	}
	for i := 0; i < NumRoles; i++ {
		for j := i + 1; j < NumRoles; j++ {
			if d.Local[i] == d.Local[j] {
				return d, errAt(Role(j).String()+"_mac", "%s_mac and %s_mac are both %v: a v1 peer entry has one mode, so each role needs its own MAC", Role(i), Role(j), d.Local[i])
			}
		}
	}
	if fd.Transport != "" {
		switch fd.Transport {
		case "v1", "reliable", "auto":
			d.Transport = fd.Transport
		default:
			return d, errAt("transport", "transport = %q is not v1, reliable or auto", fd.Transport)
		}
	}
	if fd.Timeout != "" {
		t, err := time.ParseDuration(fd.Timeout)
		if err != nil || t < 0 {
			return d, errAt("timeout", "timeout = %q is not a duration such as \"250ms\" (or \"0\" to wait forever)", fd.Timeout)
		}
		d.Timeout = t
	}
	if fd.AddressTable != "" {
		d.AddressTable = fd.AddressTable
		if !filepath.IsAbs(d.AddressTable) {
			d.AddressTable = filepath.Join(base, d.AddressTable)
		}
	}
	return d, nil
}

// check refuses one local MAC used twice on one interface: one MAC is one
// endpoint.
func check(f *File) error {
	type key struct {
		iface string
		mac   wire.MAC
	}
	used := map[key]string{}
	for _, d := range f.Devices {
		for r, m := range d.Local {
			k := key{d.Iface, m}
			if other, dup := used[k]; dup {
				return &Error{File: f.Path, Line: d.Line, Msg: fmt.Sprintf("device %q: %s_mac %v on %s is already %s: one MAC is one endpoint; give each device its own local_mac", d.Name, Role(r), m, d.Iface, other)}
			}
			used[k] = fmt.Sprintf("device %q's %s_mac", d.Name, Role(r))
		}
	}
	return nil
}

// lineIndex finds the lines of [device.NAME] headers and of their keys.
type lineIndex struct {
	lines []string
}

func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), MaxFileSize+1)
	for sc.Scan() {
		li.lines = append(li.lines, sc.Text())
	}
	return li
}

var headerRE = regexp.MustCompile(`^\s*\[\s*device\s*\.\s*("([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*\]`)

// header returns the line of [device.NAME] (0 if not found).
func (li *lineIndex) header(name string) int {
	for i, l := range li.lines {
		if m := headerRE.FindStringSubmatch(l); m != nil && (m[2] == name || m[3] == name || m[4] == name) {
			return i + 1
		}
	}
	return 0
}

// key returns the line of key inside [device.NAME] (0 if not found).
func (li *lineIndex) key(name, key string) int {
	h := li.header(name)
	if h == 0 {
		return 0
	}
	for i := h; i < len(li.lines); i++ {
		t := strings.TrimSpace(li.lines[i])
		if strings.HasPrefix(t, "[") {
			break
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return i + 1
		}
	}
	return h
}

// top returns the line of a top-level key or table (0 if not found).
func (li *lineIndex) top(key string) int {
	for i, l := range li.lines {
		t := strings.TrimSpace(l)
		if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == key {
			return i + 1
		}
		if strings.HasPrefix(t, "["+key) {
			return i + 1
		}
	}
	return 0
}
