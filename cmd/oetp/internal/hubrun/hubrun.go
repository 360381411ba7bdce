// Package hubrun runs oetp hub once the command has its flags: the
// configuration (--config and --devices), the devices' links through
// package node, the listeners and the metrics server; and prints hub
// status for people.
package hubrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

// Config loads --config and adds the devices of --devices; any problem
// is bad configuration.
func Config(config, devicesFile string) (hub.Config, error) {
	if config == "" && devicesFile == "" {
		return hub.Config{}, cli.Usagef("--config or --devices is required: the TOML file with the [[device]] tables, or a devices file (see 'oetp hub --help')")
	}
	cfg := hub.Config{HoldRoles: true}
	if config != "" {
		var err error
		if cfg, err = hub.LoadConfig(config); err != nil {
			return cfg, cli.Usagef("%v", err)
		}
	}
	if devicesFile != "" {
		f, err := devices.Load(devicesFile)
		if err != nil {
			return cfg, cli.Usagef("--devices: %v", err)
		}
		cfg.Devices = append(cfg.Devices, hub.FromDevices(f)...)
		if err := cfg.Check(); err != nil {
			return cfg, cli.Usagef("--devices %s: %v", devicesFile, err)
		}
	}
	return cfg, nil
}

// hubKeys turns the flags a link's error names into the hub's device keys.
var hubKeys = strings.NewReplacer(ifaceFlag+" ", "iface ", "--max-frame", "max_frame", "--busy-poll", "busy_poll")

// opener opens each local MAC's AF_PACKET link.
func opener(d hub.DeviceConfig, _ hub.Kind, mac wire.MAC) (node.Medium, error) {
	// Many endpoints in one process: the network poller's mode, so that
	// no reader holds a runtime P while it waits.
	il, err := node.OpenLink(node.LinkConfig{Iface: d.Iface, MAC: mac, MaxFrame: d.MaxFrame, BusyPoll: d.BusyPoll, Shared: true})
	if err = cli.Err(err); err != nil {
		// The hub has no --iface, --max-frame or --busy-poll: the device's
		// keys name them.
		return nil, &cli.UsageError{Err: &reworded{hubKeys.Replace(err.Error()), err}}
	}
	return il.Link, nil
}

// loopbackAddr turns PORT or :PORT into 127.0.0.1:PORT.
func loopbackAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return "127.0.0.1:" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// Procs is the number of CPUs the hub runs Go code on: one per device,
// at most the runtime's default (the CPUs it may use), unless the user set
// GOMAXPROCS. A hub's goroutines mostly wait (for a client's request, for
// the device's reply); with idle Ps to spare, every wake-up of one of them
// (a reply's frame arriving, a response timer armed) made the runtime wake
// a second thread to look for work that was not there: one more context
// switch and more CPU per operation, which the board and the clients then
// lack. A device's endpoints
// each keep one request outstanding, so one CPU per device is not the
// bound.
func Procs(devices, cpus int, envSet bool) int {
	if envSet {
		return cpus
	}
	return min(cpus, max(1, devices))
}

// Run serves cfg until ctx ends or SIGINT or SIGTERM; logs go to stderr.
func Run(ctx context.Context, cfg hub.Config, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	_, envSet := os.LookupEnv("GOMAXPROCS")
	procs := Procs(len(cfg.Devices), runtime.GOMAXPROCS(0), envSet)
	if !envSet {
		runtime.GOMAXPROCS(procs)
	}
	// The socket first: a second hub fails before it touches any interface.
	// A socket another hub holds, a device's address table that is
	// missing or bad, a local MAC another process holds: configuration,
	// exit 2.
	ul, err := hub.ListenUnix(cfg.Socket)
	if err != nil {
		return cli.Usagef("--socket: %v", err)
	}
	if cfg.SocketGroup != "" {
		if err := hub.SetSocketGroup(cfg.Socket, cfg.SocketGroup); err != nil {
			ul.Close()
			return cli.Usagef("%v", err)
		}
	}
	if r, ok := ul.(interface{ Replaced() string }); ok && r.Replaced() != "" {
		log.Warn(r.Replaced())
	}
	h, err := hub.New(cfg, opener, log)
	if err != nil {
		ul.Close()
		var ue *cli.UsageError
		if errors.As(err, &ue) {
			return err
		}
		msg := err.Error()
		var he *role.HeldError
		if errors.As(err, &he) {
			// The one-shot commands' fix (--wait, --mac) is no flag of
			// the hub's; the wrapping messages were made with the old one.
			held := he.Error()
			he.Fix = "stop it, or give this device other local MACs in --config (the hub holds each of them for as long as it runs)"
			msg = strings.Replace(msg, held, he.Error(), 1)
		}
		return cli.Usagef("opening devices: %s", msg)
	}
	defer h.Close()
	errc := make(chan error, 3)
	go func() { errc <- h.Serve(ul, false) }()
	tcp := ""
	if cfg.Listen != "" {
		tl, err := hub.ListenTCP(cfg.Listen, cfg.Token)
		if err != nil {
			ul.Close()
			return cli.Usagef("%v", err)
		}
		tcp = tl.Addr().String()
		go func() { errc <- h.Serve(tl, true) }()
	}
	metricsAddr := ""
	if cfg.Metrics != "" {
		ml, err := net.Listen("tcp", loopbackAddr(cfg.Metrics))
		if err != nil {
			return cli.Usagef("--metrics %s: %v", cfg.Metrics, err)
		}
		metricsAddr = ml.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", h.MetricsHandler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ml)
		defer srv.Close()
	}
	for _, d := range h.Devices() {
		c := d.Config
		log.Info("device", "name", c.Name, "iface", c.Iface, "mac", c.MAC.String(),
			"rmem", c.Local[hub.KindRMEM].String(), "dma_write", c.Local[hub.KindDMAWrite].String(),
			"dma_read", c.Local[hub.KindDMARead].String(), "address_table", c.AddressTable)
	}
	log.Info("ready", "socket", cfg.Socket, "listen", tcp, "metrics", metricsAddr, "devices", len(h.Devices()), "procs", procs, "pid", os.Getpid())
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case err := <-errc:
		if err != nil {
			return err
		}
	}
	return h.Close()
}

// ifaceFlag is the flag the interface errors of package node name.
const ifaceFlag = "--iface"

// reworded is err with a message in the user's words.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// PrintStatus prints the status st of the hub at path for people.
func PrintStatus(out io.Writer, path string, st proto.Status) error {
	fmt.Fprintf(out, "hub %s: pid %d, up %s, %d client(s), %d connection(s), %d malformed request(s)\n",
		path, st.PID, (time.Duration(st.UptimeS) * time.Second).String(), st.Clients, st.Accepted, st.Malformed)
	for _, d := range st.Devices {
		fmt.Fprintf(out, "device %s: %s on %s; local rmem %s, dma_write %s, dma_read %s; transport %s\n",
			d.Name, d.MAC, d.Iface, d.Local["rmem"], d.Local["dma_write"], d.Local["dma_read"], d.Transport)
		if d.AddressTable != "" {
			fmt.Fprintf(out, "  address table %s (%d nodes)\n", d.AddressTable, d.Nodes)
		}
		for _, op := range []string{"read", "write", "read_block", "write_block"} {
			o := d.Ops[op]
			line := fmt.Sprintf("  %-11s %10d ops, mean %.1f µs", op, o.Count, o.MeanUS)
			if o.Bytes > 0 {
				line += fmt.Sprintf(", %s", cli.HumanBytes(o.Bytes))
			}
			if len(o.Errors) > 0 {
				b, _ := json.Marshal(o.Errors)
				line += ", errors " + string(b)
			}
			fmt.Fprintln(out, line)
		}
		for _, k := range []string{"rmem", "dma_write", "dma_read"} {
			e := d.Endpoints[k]
			fmt.Fprintf(out, "  endpoint %-9s %s: tx %d rx %d, rtt min/mean/max %.0f/%.0f/%.0f µs, retries %d, timeouts %d, late %d, kernel drops %d\n",
				k, e.MAC, e.TxFrames, e.RxFrames, e.RTTMinUS, e.RTTMeanUS, e.RTTMaxUS, e.Retries, e.Timeouts, e.Late, e.KernelDrops)
		}
	}
	return nil
}
