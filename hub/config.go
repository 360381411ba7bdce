package hub

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/internal/tomlin"
	"github.com/openenoc/oetp/memspec"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// Kind is the kind of operation a local MAC is used for. v1 gives a peer
// entry one mode, so the hub uses one local MAC, and one endpoint, per kind.
type Kind int

// The three kinds, indexes into Device.Local.
const (
	KindRMEM     Kind = 0 // RMEM reads and writes: the device's entry for this MAC is mode rmem (1)
	KindDMAWrite Kind = 1 // DMA writes to the device: its entry is mode dma-write (2)
	KindDMARead  Kind = 2 // DMA reads from the device: its entry is mode dma-read (3)
	numKinds          = 3
)

// String returns the kind's TOML key: rmem, dma_write or dma_read.
func (k Kind) String() string { return [...]string{"rmem", "dma_write", "dma_read"}[k] }

// DeviceMode is the mode of the device's peer entry for the hub's MAC of
// this kind (what --print-peer-entries prints).
func (k Kind) DeviceMode() endpoint.Mode {
	return [...]endpoint.Mode{endpoint.ModeRMEM, endpoint.ModeDMAWrite, endpoint.ModeDMARead}[k]
}

// localMode is the mode of the hub endpoint's own peer entry for the
// device: the complement of DeviceMode.
func (k Kind) localMode() endpoint.Mode {
	return [...]endpoint.Mode{endpoint.ModeRMEM, endpoint.ModeDMARead, endpoint.ModeDMAWrite}[k]
}

// DefaultTimeout is a device's response timeout when the config gives none.
const DefaultTimeout = time.Second

// Config is the hub's configuration (`oetp hub --config FILE`).
type Config struct {
	// Socket is the Unix socket path; empty selects DefaultSocket().
	Socket string
	// SocketGroup, if set, is the group (a name or a GID) given to the
	// socket: its members may connect (mode 0660).
	SocketGroup string
	// Listen is an optional TCP address (--listen): a bare port or ":port"
	// listens on loopback only. It needs Token.
	Listen string
	// Token is the shared secret every TCP client must present in HELLO,
	// loopback ones too, before the hub reads anything else from it.
	Token string
	// Metrics is an optional address serving Prometheus text (--metrics):
	// a bare port or ":port" means loopback.
	Metrics string
	// Devices are the devices the hub owns.
	Devices []DeviceConfig
	// Groups are groups of the devices written to with one group DMA
	// write (GROUP_WRITE).
	Groups []GroupConfig
	// HoldRoles makes the hub hold the cross-process initiator role
	// (package role) of each local MAC for its whole life, so that no other
	// process initiates from them; `oetp hub` always does (LoadConfig sets
	// it).
	HoldRoles bool
	// Limits bound what clients can make the hub hold ([limits]).
	Limits Limits
}

// DeviceConfig is one [[device]] table.
type DeviceConfig struct {
	Name  string
	Iface string
	// MAC is the device's own address.
	MAC wire.MAC
	// AddressTable is the optional address table path (relative paths are
	// relative to the config file).
	AddressTable string
	// Local are the hub's local MACs by Kind; zero ones are derived by
	// DeriveMAC when the config is loaded.
	Local [numKinds]wire.MAC
	// RMEMTimeout and DMATimeout bound the wait for each response (0 in
	// the file selects DefaultTimeout; a negative value is refused).
	RMEMTimeout time.Duration
	DMATimeout  time.Duration
	// MaxFrame is the frame ceiling; 0 selects min(8192, MTU+14).
	MaxFrame int
	// BusyPoll is the links' busy-poll window (0: never spin).
	BusyPoll time.Duration
	// Retry is the recovery policy of the device's three endpoints
	// (retries, deadline, min_rto, volatile): the zero value is v1, one
	// try. The address table's volatile nodes (ports, non-incremental and
	// TOML volatile nodes) are added to Retry.Volatile, so they are never
	// retried.
	Retry endpoint.RetryPolicy
	// Access is who may read and write the device (read, write).
	Access Access
	// Transport is how the hub's endpoints reach the device (transport):
	// v1 (the default), reliable (the reliable transport of
	// docs/reliable.md beneath the endpoints; the device's peer entries
	// need transport = "reliable") or auto (reliable if the device answers
	// its handshake, else v1).
	Transport node.Transport
}

// DeriveMAC is the default local MAC of kind k for a device: a locally
// administered unicast address hashed from the device's MAC, its name and
// the kind, so it is the same on every start and differs between devices
// and kinds.
func DeriveMAC(device wire.MAC, name string, k Kind) wire.MAC {
	return devices.DeriveMAC(device, name, devices.Role(k))
}

// DefaultSocket is the socket path when none is configured (see
// proto.DefaultSocket).
func DefaultSocket() string { return proto.DefaultSocket() }

// fileConfig is the TOML layout.
type fileConfig struct {
	Socket    string       `toml:"socket"`
	Listen    string       `toml:"listen"`
	TokenFile string       `toml:"token_file"`
	Metrics   string       `toml:"metrics"`
	Devices   string       `toml:"devices"`
	SockGroup string       `toml:"socket_group"`
	Device    []fileDevice `toml:"device"`
	Group     []fileGroup  `toml:"group"`
	Limits    fileLimits   `toml:"limits"`
}

// fileLimits is the [limits] table.
type fileLimits struct {
	MaxClients   int    `toml:"max_clients"`
	MaxMessage   string `toml:"max_message"`
	MemoryBudget string `toml:"memory_budget"`
	IdleTimeout  string `toml:"idle_timeout"`
	ReadDeadline string `toml:"read_deadline"`
}

// limits converts the [limits] table; errors name the key.
func (fl fileLimits) limits() (Limits, error) {
	l := Limits{MaxClients: fl.MaxClients}
	if fl.MaxClients < 0 {
		return l, fmt.Errorf("[limits] max_clients %d is negative: give the number of connections served at once (default %d)", fl.MaxClients, DefaultMaxClients)
	}
	size := func(key, v string, dst *int64, def int64) error {
		if v == "" {
			return nil
		}
		n, err := num.ParseMax(v, 1<<40)
		if err == nil && n == 0 {
			err = errors.New("is zero")
		}
		if err != nil {
			return fmt.Errorf("[limits] %s %q: %v; give bytes, K/M/G suffixes allowed (default %d)", key, v, num.Reason(err), def)
		}
		*dst = int64(n)
		return nil
	}
	var mm int64
	if err := size("max_message", fl.MaxMessage, &mm, DefaultMaxMessage); err != nil {
		return l, err
	}
	l.MaxMessage = int(min(mm, proto.MaxMessage))
	if err := size("memory_budget", fl.MemoryBudget, &l.MemoryBudget, DefaultMemoryBudget); err != nil {
		return l, err
	}
	dur := func(key, v string, dst *time.Duration, def time.Duration, never bool) error {
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err == nil && d <= 0 && !(never && d < 0) {
			err = errors.New("is not positive")
		}
		if err != nil {
			return fmt.Errorf("[limits] %s %q: %v; give a duration such as %v", key, v, err, def)
		}
		*dst = d
		return nil
	}
	if err := dur("idle_timeout", fl.IdleTimeout, &l.IdleTimeout, DefaultIdleTimeout, true); err != nil {
		return l, err
	}
	err := dur("read_deadline", fl.ReadDeadline, &l.ReadDeadline, DefaultReadDeadline, false)
	return l, err
}

type fileDevice struct {
	Name         string    `toml:"name"`
	Iface        string    `toml:"iface"`
	MAC          string    `toml:"mac"`
	AddressTable string    `toml:"address_table"`
	Local        fileLocal `toml:"local"`
	Timeout      string    `toml:"timeout"`
	RMEMTimeout  string    `toml:"rmem_timeout"`
	DMATimeout   string    `toml:"dma_timeout"`
	MaxFrame     int       `toml:"max_frame"`
	BusyPoll     string    `toml:"busy_poll"`
	Retries      int       `toml:"retries"`
	Deadline     string    `toml:"deadline"`
	MinRTO       string    `toml:"min_rto"`
	Volatile     []string  `toml:"volatile"`
	Transport    string    `toml:"transport"`
	Read         []string  `toml:"read"`
	Write        []string  `toml:"write"`
}

type fileLocal struct {
	RMEM     string `toml:"rmem"`
	DMAWrite string `toml:"dma_write"`
	DMARead  string `toml:"dma_read"`
}

// LoadConfig reads a TOML configuration file. Errors name the key and the
// fix. Omitted local MACs are derived (DeriveMAC).
func LoadConfig(path string) (Config, error) {
	var fc fileConfig
	md, err := tomlin.DecodeFile(path, &fc)
	var le *tomlin.LimitError
	if errors.As(err, &le) {
		return Config{}, fmt.Errorf("hub config: %w", err)
	}
	if err != nil {
		return Config{}, fmt.Errorf("hub config %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("hub config %s: unknown key(s) %s; the keys are socket, socket_group, listen, token_file, metrics, devices, [limits] with max_clients, max_message, memory_budget, idle_timeout, read_deadline, and [[device]] with name, iface, mac, address_table, timeout, rmem_timeout, dma_timeout, max_frame, busy_poll, retries, deadline, min_rto, volatile, transport, read, write and [device.local] rmem, dma_write, dma_read, and [[group]] with name, mac, devices, local",
			path, strings.Join(keys, ", "))
	}
	c := Config{Socket: fc.Socket, SocketGroup: fc.SockGroup, Listen: fc.Listen, Metrics: fc.Metrics, HoldRoles: true}
	if c.Limits, err = fc.Limits.limits(); err != nil {
		return Config{}, fmt.Errorf("hub config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	if fc.TokenFile != "" {
		tf := fc.TokenFile
		if !filepath.IsAbs(tf) {
			tf = filepath.Join(base, tf)
		}
		if c.Token, err = ReadTokenFile(tf); err != nil {
			return Config{}, fmt.Errorf("hub config %s: token_file: %w", path, err)
		}
	}
	if fc.Devices != "" {
		df := fc.Devices
		if !filepath.IsAbs(df) {
			df = filepath.Join(base, df)
		}
		f, err := devices.Load(df)
		if err != nil {
			return Config{}, fmt.Errorf("hub config %s: devices: %w", path, err)
		}
		c.Devices = append(c.Devices, FromDevices(f)...)
	}
	for i, fd := range fc.Device {
		where := fmt.Sprintf("hub config %s: [[device]] %d", path, i+1)
		if fd.Name != "" {
			where += fmt.Sprintf(" (%s)", fd.Name)
		}
		d := DeviceConfig{Name: fd.Name, Iface: fd.Iface, AddressTable: fd.AddressTable, MaxFrame: fd.MaxFrame,
			Access: Access{Read: fd.Read, Write: fd.Write}}
		if fd.MAC == "" {
			return Config{}, fmt.Errorf("%s: mac is missing: give the device's MAC, e.g. mac = \"02:0e:0c:00:00:01\"", where)
		}
		if d.MAC, err = wire.ParseMAC(fd.MAC); err != nil {
			return Config{}, fmt.Errorf("%s: mac: %v", where, err)
		}
		if d.AddressTable != "" && !filepath.IsAbs(d.AddressTable) {
			d.AddressTable = filepath.Join(base, d.AddressTable)
		}
		for k, s := range [numKinds]string{fd.Local.RMEM, fd.Local.DMAWrite, fd.Local.DMARead} {
			if s == "" {
				continue
			}
			if d.Local[k], err = wire.ParseMAC(s); err != nil {
				return Config{}, fmt.Errorf("%s: local.%s: %v", where, Kind(k), err)
			}
		}
		dur := func(key, s string, def time.Duration) (time.Duration, error) {
			if s == "" {
				return def, nil
			}
			v, err := time.ParseDuration(s)
			if err != nil {
				return 0, fmt.Errorf("%s: %s = %q is not a Go duration such as \"500ms\" or \"0\" (wait forever)", where, key, s)
			}
			if v < 0 {
				return 0, fmt.Errorf("%s: %s = %q is negative; use a positive duration or \"0\" to wait forever", where, key, s)
			}
			return v, nil
		}
		t, err := dur("timeout", fd.Timeout, DefaultTimeout)
		if err != nil {
			return Config{}, err
		}
		if d.RMEMTimeout, err = dur("rmem_timeout", fd.RMEMTimeout, t); err != nil {
			return Config{}, err
		}
		if d.DMATimeout, err = dur("dma_timeout", fd.DMATimeout, t); err != nil {
			return Config{}, err
		}
		if d.BusyPoll, err = dur("busy_poll", fd.BusyPoll, 0); err != nil {
			return Config{}, err
		}
		if fd.Transport != "" {
			if d.Transport, err = node.ParseTransport(fd.Transport); err != nil {
				return Config{}, fmt.Errorf("%s: transport: %v", where, err)
			}
		}
		if d.BusyPoll > node.MaxBusyPoll {
			return Config{}, fmt.Errorf("%s: busy_poll = %q: use \"0\" (off) through %v, such as \"50us\"", where, fd.BusyPoll, node.MaxBusyPoll)
		}
		if fd.MaxFrame != 0 {
			if err := wire.CheckMaxFrame(fd.MaxFrame); err != nil {
				return Config{}, fmt.Errorf("%s: max_frame = %d: %v; or leave it out for the interface's MTU", where, fd.MaxFrame, err)
			}
		}
		if fd.Retries < 0 || fd.Retries > endpoint.MaxRetries {
			return Config{}, fmt.Errorf("%s: retries = %d is out of range: use 0 (one try) through %d", where, fd.Retries, endpoint.MaxRetries)
		}
		d.Retry.Retries = fd.Retries
		if d.Retry.Deadline, err = dur("deadline", fd.Deadline, 0); err != nil {
			return Config{}, err
		}
		if d.Retry.MinRTO, err = dur("min_rto", fd.MinRTO, 0); err != nil {
			return Config{}, err
		}
		for _, v := range fd.Volatile {
			r, err := memspec.ParseRegion(v)
			if err != nil || strings.Count(v, ":") != 1 {
				return Config{}, fmt.Errorf("%s: volatile = %q is not BASE:SIZE, e.g. \"0x2000:4\" for one FIFO word", where, v)
			}
			d.Retry.Volatile = append(d.Retry.Volatile, endpoint.AddrRange{Base: r.Base, Size: r.Size})
		}
		c.Devices = append(c.Devices, d)
	}
	if c.Groups, err = loadGroups(path, fc.Group); err != nil {
		return Config{}, err
	}
	if err := c.Check(); err != nil {
		return Config{}, fmt.Errorf("hub config %s: %w", path, err)
	}
	return c, nil
}

// FromDevices returns the hub devices of a devices file: each device with
// its interface, MAC, role MACs as local MACs, timeout (for RMEM and DMA),
// transport and address table; the rest takes the defaults of a
// [[device]] without those keys.
func FromDevices(f *devices.File) []DeviceConfig {
	var out []DeviceConfig
	for _, d := range f.Devices {
		tm, _ := node.ParseTransport(d.Transport) // checked by devices.Parse
		out = append(out, DeviceConfig{Name: d.Name, Iface: d.Iface, MAC: d.MAC, AddressTable: d.AddressTable,
			Local: d.Local, RMEMTimeout: d.Timeout, DMATimeout: d.Timeout, Transport: tm})
	}
	return out
}

// checkName checks the name of the i-th [[section]] (a device or a group):
// use says what clients do with it, example is a name to suggest.
func checkName(section string, i int, name, use, example string) error {
	if name == "" {
		return fmt.Errorf("[[%s]] %d: name is missing: give the name clients %s, e.g. name = %q", section, i+1, use, example)
	}
	if len(name) > 255 || strings.ContainsAny(name, " \t\n\x00") {
		return fmt.Errorf("%s %q: name must be 1..255 bytes without spaces", section, name)
	}
	return nil
}

// Check validates the configuration and derives omitted local MACs.
func (c *Config) Check() error {
	if len(c.Devices) == 0 {
		return errors.New("no [[device]]: add one with name, iface and mac")
	}
	names := map[string]bool{}
	type key struct {
		iface string
		mac   wire.MAC
	}
	used := map[key]string{}
	for i := range c.Devices {
		d := &c.Devices[i]
		if err := checkName("device", i, d.Name, "open it by", "board1"); err != nil {
			return err
		}
		if names[d.Name] {
			return fmt.Errorf("device %q is defined twice; give each [[device]] its own name", d.Name)
		}
		names[d.Name] = true
		if d.Iface == "" {
			return fmt.Errorf("device %q: iface is missing: name the interface facing it (list them with `ip link`)", d.Name)
		}
		if d.MAC.IsZero() || d.MAC.IsGroup() {
			return fmt.Errorf("device %q: mac %v is not a unicast address; give the device's own MAC", d.Name, d.MAC)
		}
		if d.RMEMTimeout < 0 || d.DMATimeout < 0 {
			return fmt.Errorf("device %q: timeouts must not be negative", d.Name)
		}
		if err := d.Access.compile(); err != nil {
			return fmt.Errorf("device %q: %w", d.Name, err)
		}
		for k := range numKinds {
			if d.Local[k].IsZero() {
				d.Local[k] = DeriveMAC(d.MAC, d.Name, Kind(k))
			}
			m := d.Local[k]
			if m.IsGroup() {
				return fmt.Errorf("device %q: local.%s %v is a group address; the hub's own MACs must be unicast", d.Name, Kind(k), m)
			}
			if m == d.MAC {
				return fmt.Errorf("device %q: local.%s %v is the device's own MAC; use another address", d.Name, Kind(k), m)
			}
			kk := key{d.Iface, m}
			if other, dup := used[kk]; dup {
				return fmt.Errorf("device %q: local.%s %v on %s is already used by %s: one MAC is one endpoint, and a v1 peer entry has one mode; give each kind and device its own MAC (or omit it to derive one)",
					d.Name, Kind(k), m, d.Iface, other)
			}
			used[kk] = fmt.Sprintf("device %q local.%s", d.Name, Kind(k))
		}
	}
	return c.checkGroups()
}

// PeerEntries returns, as `oetp serve` TOML [[peer]] tables, the peer table
// entries each device needs for the hub's local MACs
// (--print-peer-entries).
func (c Config) PeerEntries() string {
	var b strings.Builder
	for i, d := range c.Devices {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# device %s (%v on %s): peer table entries for the hub's local MACs\n", d.Name, d.MAC, d.Iface)
		for k := range numKinds {
			fmt.Fprintf(&b, "[[peer]]\nmac = %q\nmode = %q  # %s: %s\n", d.Local[k].String(),
				modeName(Kind(k).DeviceMode()), Kind(k), kindUse(Kind(k)))
			if d.Transport != node.V1 {
				fmt.Fprintf(&b, "transport = %q\n", d.Transport.String())
			}
		}
	}
	b.WriteString(c.groupPeerEntries())
	return b.String()
}

func modeName(m endpoint.Mode) string {
	return [...]string{"none", "rmem", "dma-write", "dma-read"}[m]
}

func kindUse(k Kind) string {
	return [...]string{"the hub reads and writes registers", "the hub writes blocks by DMA", "the hub reads blocks by DMA"}[k]
}
