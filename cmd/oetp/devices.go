package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
)

func init() { register("devices", newDevicesCmd) }

// devicesUsage is the help of --devices.
const devicesUsage = "the devices `FILE` that --device names come from (default $OETP_DEVICES, else $XDG_CONFIG_HOME/oetp/devices.toml or ~/.config/oetp/devices.toml)"

// registerDevice adds --device and --devices to cmd.
func registerDevice(cmd *cobra.Command, device, file *string) {
	cmd.Flags().StringVar(device, "device", "", "the device `NAME` of the devices file: it gives --iface, --peer, --mac (this host's MAC for the operation's role), --timeout, --transport and, for regs, --table")
	cmd.Flags().StringVar(file, "devices", "", devicesUsage)
}

// loadDevices loads the devices file --devices, $OETP_DEVICES or the
// default names; any problem is bad configuration.
func loadDevices(flag string) (*devices.File, error) {
	path, how := devices.Find(flag)
	if path == "" {
		return nil, usagef("no devices file: give --devices FILE or set $%s (no home directory for the default)", devices.Env)
	}
	f, err := devices.Load(path)
	if err != nil {
		if flag == "" {
			return nil, usagef("%v (the devices file from %s)", err, how)
		}
		return nil, usagef("--devices: %v", err)
	}
	return f, nil
}

// lookupDevice returns the device called name.
func lookupDevice(flag, name string) (*devices.Device, error) {
	f, err := loadDevices(flag)
	if err != nil {
		return nil, err
	}
	d, err := f.Device(name)
	if err != nil {
		return nil, usagef("--device: %v", err)
	}
	return &d, nil
}

// resolveDevice loads --device once; nil without one. The flags it
// replaces may not be given with it.
func (f *opFlags) resolveDevice() (*devices.Device, error) {
	if f.device == "" || f.dev != nil {
		return f.dev, nil
	}
	for _, name := range []string{"iface", "peer", "mac"} {
		if fl := f.fs.Lookup(name); fl != nil && fl.Changed {
			return nil, usagef("--device %s gives the interface, the board's MAC and this host's MACs: drop --%s", f.device, name)
		}
	}
	d, err := lookupDevice(f.devices, f.device)
	if err != nil {
		return nil, err
	}
	f.dev = d
	return d, nil
}

// roleOf is the devices-file role of the local peer entry's mode: RMEM,
// DMA writes (the local entry is mode dma-read) or DMA reads.
func roleOf(mode endpoint.Mode) devices.Role {
	switch mode {
	case endpoint.ModeDMARead:
		return devices.DMAWrite
	case endpoint.ModeDMAWrite:
		return devices.DMARead
	}
	return devices.RMEM
}

// useDevice fills --iface, --peer, --mac, --timeout and --transport from
// --device for an operation whose local peer entry has mode; without
// --device it checks that --iface and --peer were given.
func (f *opFlags) useDevice(mode endpoint.Mode) error {
	d, err := f.resolveDevice()
	if err != nil {
		return err
	}
	if d == nil {
		switch {
		case f.iface == "":
			return usagef("--iface is required (or --device NAME from a devices file)")
		case f.peer.m.IsZero() && !f.fs.Changed("peer"):
			return usagef("--peer is required (or --device NAME from a devices file)")
		}
		return nil
	}
	f.iface, f.peer.m, f.mac.m = d.Iface, d.MAC, d.Local[roleOf(mode)]
	if !f.fs.Changed("timeout") {
		f.timeout = d.Timeout
	}
	if !f.fs.Changed("transport") {
		f.transport = d.Transport
	}
	return nil
}

func newDevicesCmd() *cobra.Command {
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "devices [--devices FILE]",
		Short: "List the devices of the devices file, which --device NAME names",
		Long: `devices lists the devices of the devices file: the boards that rmem, dma and
regs reach with --device NAME, and that a hub serves with --devices FILE (or
devices = "FILE" in its config). The file is --devices FILE, else
$OETP_DEVICES, else $XDG_CONFIG_HOME/oetp/devices.toml (~/.config/oetp/devices.toml
without XDG_CONFIG_HOME). docs/devices.md describes it:

  [device.board1]
  iface = "eth1"
  mac = "02:0e:0c:00:00:02"          # the board
  local_mac = "02:0e:0c:00:01:00"    # seed of this host's role MACs (default: mac)
  # or the role MACs given one by one:
  # rmem_mac = "...", dma_write_mac = "...", dma_read_mac = "..."
  transport = "v1"                   # or "reliable" / "auto"
  timeout = "250ms"
  address_table = "board1.xml"       # relative to the devices file

A v1 peer entry has one mode, so RMEM, DMA writes and DMA reads to one board
take three MACs of this host; those not given are derived from local_mac (or
mac), the device's name and the role, exactly as the hub derives its own.
'oetp devices peer-entries NAME' prints the peer table entries the board needs
for them. Nothing is sent.`,
		Example: `  oetp devices
  oetp devices --devices lab.toml --json
  oetp devices peer-entries board1`,
		Args:        noArgs,
		Annotations: map[string]string{annotRuns: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadDevices(file)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type devJSON struct {
					Name         string  `json:"name"`
					Iface        string  `json:"iface"`
					MAC          string  `json:"mac"`
					RMEMMAC      string  `json:"rmem_mac"`
					DMAWriteMAC  string  `json:"dma_write_mac"`
					DMAReadMAC   string  `json:"dma_read_mac"`
					Transport    string  `json:"transport"`
					Timeout      float64 `json:"timeout_s"`
					AddressTable string  `json:"address_table"`
				}
				list := []devJSON{}
				for _, d := range f.Devices {
					list = append(list, devJSON{d.Name, d.Iface, d.MAC.String(), d.Local[0].String(), d.Local[1].String(), d.Local[2].String(),
						d.Transport, d.Timeout.Seconds(), d.AddressTable})
				}
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				return enc.Encode(struct {
					File    string    `json:"file"`
					Devices []devJSON `json:"devices"`
				}{f.Path, list})
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tIFACE\tMAC\tRMEM MAC\tDMA WRITE MAC\tDMA READ MAC\tTRANSPORT\tTIMEOUT\tADDRESS TABLE")
			for _, d := range f.Devices {
				table := d.AddressTable
				if table == "" {
					table = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%v\t%s\t%v\t%s\n", d.Name, d.Iface, d.MAC, d.Local[0], d.Local[1], d.Local[2], d.Transport, d.Timeout, table)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&file, "devices", "", devicesUsage)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the devices as one JSON object")
	cmd.AddCommand(newDevicesPeerEntriesCmd())
	return cmd
}

func newDevicesPeerEntriesCmd() *cobra.Command {
	var file, window string
	var csr bool
	var entry intFlag
	csrBase := u32Flag{v: devices.CSRBase, hex: true}
	csrPeers := intFlag{v: devices.CSRPeers}
	cmd := &cobra.Command{
		Use:   "peer-entries NAME [--csr [--entry N]] [--window BASE:SIZE]",
		Short: "Print the peer table entries a board needs for this host's MACs",
		Long: `peer-entries prints what the device NAME's peer table needs so that this
host's three role MACs reach it: RMEM from the rmem MAC (mode rmem), DMA
writes from the dma_write MAC (mode dma-write), DMA reads from the dma_read
MAC (mode dma-read).

By default it prints the --peer arguments of an 'oetp serve' standing in for
the board, one per line, ready for the shell:

  oetp serve --iface eth1 --mac 02:0e:0c:00:00:02 --region 0:1M $(oetp devices peer-entries board1)

With --csr it prints instead the CSR writes an openENOC endpoint needs, as
runnable 'oetp rmem write --device NAME --addr A --data D' lines, each with
its register's name as a comment: peers.entry[N].mac_address.lo_word (the
MAC's last four octets) and hi_word (its first two), and dma.mode (1 rmem,
2 dma-write, 3 dma-read; written with --mask 0x3, leaving the entry's other
dma bits alone), for entries N, N+1, N+2 (--entry N, default 0). The
addresses are those of openENOC's register map with the endpoint
interface's registers at --csr-base and --csr-peers peer entries (defaults
0x20000800 and 4, openENOC's full endpoint: its CSR block at 0x2000_0000,
the endpoint interface at +0x800, peers.entry[0] at +0x100). The writes go by
RMEM from this host's RMEM MAC, so the board must already admit it.
--window BASE:SIZE adds the window the board grants (window= for serve,
local_address/remote_address/size for the CSRs); without it serve grants
the whole space and the CSR window is left as the board has it. A device with transport reliable or auto gets
transport=reliable on its serve entries (openENOC boards speak v1 only).`,
		Example: `  oetp devices peer-entries board1
  oetp devices peer-entries board1 --window 0:1M
  oetp devices peer-entries board1 --csr --entry 1 --window 0:1M > csr.sh`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := lookupDevice(file, args[0])
			if err != nil {
				return err
			}
			var base, size uint64
			if window != "" {
				b, s, ok := strings.Cut(window, ":")
				if ok {
					base, err = num.Parse(b)
					if err == nil {
						size, err = num.Parse(s)
					}
				}
				if !ok || err != nil || base > 0xFFFFFFFF || size == 0 || size > 1<<32 || base+size > 1<<32 {
					return usagef("--window %q is not BASE:SIZE within the 32-bit space, e.g. --window 0x100000:64K", window)
				}
			}
			if entry.set && !csr {
				return usagef("--entry applies to --csr: the serve entries are --peer arguments in order")
			}
			out := cmd.OutOrStdout()
			if !csr {
				for r, m := range d.Local {
					arg := fmt.Sprintf("--peer %v,mode=%s", m, devices.Role(r).BoardMode())
					if window != "" {
						arg += fmt.Sprintf(",window=0x%x:0x%x", base, size)
					}
					if d.Transport != "v1" {
						arg += ",transport=reliable"
					}
					fmt.Fprintln(out, arg)
				}
				return nil
			}
			if d.Transport != "v1" {
				fmt.Fprintf(cmd.ErrOrStderr(), "oetp: note: device %q has transport %s; an openENOC endpoint speaks v1 only: set transport = \"v1\" for it\n", d.Name, d.Transport)
			}
			var win *devices.Window
			if window != "" {
				win = &devices.Window{Base: base, Size: size}
			}
			writes, err := devices.PeerCSRs(csrBase.v, csrPeers.v, entry.v, d.Local, win)
			if err != nil {
				return usagef("--entry %d --csr-peers %d --csr-base 0x%x: %v", entry.v, csrPeers.v, csrBase.v, err)
			}
			target := "--device " + shellQuote(d.Name)
			if file != "" {
				target += " --devices " + shellQuote(file)
			}
			fmt.Fprintf(out, "# openENOC peer entries %d..%d for %s; the endpoint interface's registers at 0x%08x, %d peer entries\n", entry.v, entry.v+2, d.Name, csrBase.v, csrPeers.v)
			for _, w := range writes {
				line := fmt.Sprintf("oetp rmem write %s --addr 0x%08x --data 0x%08x", target, w.Addr, w.Value)
				if w.Mask != 0xFFFFFFFF {
					line += fmt.Sprintf(" --mask 0x%08x", w.Mask)
				}
				note := ""
				if w.Note != "" {
					note = " (" + w.Note + ")"
				}
				fmt.Fprintf(out, "%s  # %s = 0x%x%s\n", line, w.Name, w.Value, note)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "devices", "", devicesUsage)
	cmd.Flags().BoolVar(&csr, "csr", false, "print the CSR writes of an openENOC endpoint instead of serve's --peer arguments")
	cmd.Flags().Var(&entry, "entry", "with --csr: the first peer entry `N` to use (the three roles take N, N+1, N+2)")
	cmd.Flags().Var(&csrPeers, "csr-peers", "with --csr: the board's number of peer entries `N` (NUM_OF_PEERS), which places peers.entry[0]")
	cmd.Flags().Var(&csrBase, "csr-base", "with --csr: the `ADDR` of the endpoint interface's registers on the board, as openENOC's full endpoint places them")
	cmd.Flags().StringVar(&window, "window", "", "the window `BASE:SIZE` the board grants this host's MACs")
	return cmd
}

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/+=@-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
