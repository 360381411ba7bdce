//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/wire"
)

// BenchmarkHub measures the hub's goals side by side over the veth pair of
// the hub tests, each client beside its baseline in the same run: an
// in-process Go endpoint on the hub's host (the library, no hub), the Go
// client, the Python client (the system python3), and the one-shot commands.
// Every row runs what users run: separate processes, default flags, no
// pinning. Run with
//
//	go test -run '^$' -bench BenchmarkHub -count 3 ./cmd/oetp
//
// (-count repeats the whole set, interleaving the rows and the baselines).
const benchBoardConfig = hubBoardConfig + `[[region]]  # 64 MiB for the block rows
base = 0x1000000
size = "64M"

[[peer]]    # the in-process Go endpoint of the baselines (RMEM)
mac = "02:0e:0c:00:02:01"
mode = "rmem"

[[peer]]    # the in-process endpoint's and 'oetp dma write --no-hub's DMA writes
mac = "02:0e:0c:00:02:02"
mode = "dma-write"

`

var (
	benchRMEMMAC = wire.MAC{0x02, 0x0e, 0x0c, 0, 0x02, 0x01}
	benchDMAMAC  = wire.MAC{0x02, 0x0e, 0x0c, 0, 0x02, 0x02}
)

func BenchmarkHub(b *testing.B) {
	f := startHubFixtureWith(b, benchBoardConfig, "")
	board, _ := wire.ParseMAC(netServer)
	// The in-process baselines: endpoints on the hub's host, same link.
	inproc := func(mac wire.MAC, mode endpoint.Mode) *endpoint.Endpoint {
		var ep *endpoint.Endpoint
		err := f.tn.Host(1).Do(func() error {
			l, err := afpacket.Open("eth0", afpacket.Config{Addr: mac})
			if err != nil {
				return err
			}
			ep, err = endpoint.New(l, nil, endpoint.Config{MAC: mac, RMEMTimeout: time.Second, DMATimeout: time.Second})
			if err != nil {
				return err
			}
			return ep.SetPeer(0, endpoint.Peer{MAC: board, Mode: mode, WindowSize: 1 << 32})
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ep.Close() })
		return ep
	}
	floorHello, floorProm, floorTeam := testutil.BuildCommandPlain(b, "./testdata/floor/hello"), testutil.BuildCommandPlain(b, "./testdata/floor/promlink"), testutil.BuildCommandPlain(b, "./testdata/floor/teamlibs")
	floorPingPong := testutil.BuildCommandPlain(b, "./testdata/floor/pingpong")
	rmemEP := inproc(benchRMEMMAC, endpoint.ModeRMEM)
	dmaEP := inproc(benchDMAMAC, endpoint.ModeDMARead)
	c, dev := hubDevice(b, f.sock, "board1")
	ctx := context.Background()
	py, pyErr := exec.LookPath("python3")
	python := func(b *testing.B, mode string, n int) float64 {
		if pyErr != nil {
			b.Skip("python3 is not installed")
		}
		cmd := exec.Command(py, filepath.Join(pythonDir(), "tests", "bench_hub.py"), mode, strconv.Itoa(n))
		cmd.Env = append(os.Environ(), "OETP_HUB="+f.sock, "OETP_TEST_DEVICE=board1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("bench_hub.py %s: %v %s", mode, err, out)
		}
		var r struct {
			Ops     int     `json:"ops"`
			Seconds float64 `json:"seconds"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("bench_hub.py: %v: %s", err, out)
		}
		b.ReportMetric(r.Seconds*1e9/float64(n), "ns/op")
		b.ReportMetric(float64(r.Ops)/r.Seconds, "ops/s")
		return r.Seconds
	}
	opsPerSec := func(b *testing.B, perOp int) {
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "ops/s")
	}

	data := testutil.Pattern(64<<20, 0)
	in := filepath.Join(f.dir, "64m.bin")
	writeFile(b, in, data)
	mbps := func(b *testing.B, n int) {
		b.ReportMetric(float64(n)*float64(len(data))/b.Elapsed().Seconds()/1e6, "MB/s")
	}
	type row struct {
		name string
		fn   func(b *testing.B)
	}
	var rows []row
	run := func(name string, fn func(b *testing.B)) { rows = append(rows, row{name, fn}) }
	// The latest figures of the baselines and floors, for the ratios the
	// rows after them report.
	var inprocNS, hopNS, promLoop float64
	run("read/in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := rmemEP.RMEMRead(ctx, 0, 0x10); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1)
		inprocNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	run("read/floor-unix-pingpong", func(b *testing.B) {
		hopNS = pingPong(b, floorPingPong, f.dir, max(b.N, 5000))
	})
	run("read/go-client", func(b *testing.B) {
		hubTime := func() (float64, uint64) {
			st, _, err := c.Status()
			if err != nil {
				b.Fatal(err)
			}
			o := st.Devices[0].Ops["read"]
			return o.MeanUS * float64(o.Count), o.Count
		}
		t0, n0 := hubTime()
		for b.Loop() {
			if _, err := dev.Read(0x10); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1)
		// The part of each round trip spent in the hub's endpoint call.
		t1, n1 := hubTime()
		b.ReportMetric((t1-t0)*1e3/float64(n1-n0), "hub-endpoint-ns/op")
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if inprocNS > 0 {
			b.ReportMetric(ns/inprocNS, "x-in-process")
			if hopNS > 0 {
				// The ratio a hub that cost nothing beyond the hop would reach,
				// and what this one spends beyond the hop and the endpoint call
				// of the in-process row.
				b.ReportMetric((inprocNS+hopNS)/inprocNS, "floor-x-in-process")
				b.ReportMetric(ns-hopNS-inprocNS, "beyond-floor-ns/op")
			}
		}
	})
	run("read/python", func(b *testing.B) { python(b, "single", max(b.N, 2000)) })

	// A shell loop of one-shot reads: through the hub (found by $OETP_HUB),
	// and each command with its own endpoint (--no-hub).
	shellLoop := func(b *testing.B, command string) float64 {
		n := max(b.N, 20)
		isOetp := !strings.HasPrefix(command, "/")
		if isOetp {
			command = f.bin + " " + command
		}
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %s >/dev/null || exit 1; i=$((i+1)); done`, n, command)
		cmd := f.tn.Host(1).Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "OETP_HUB="+f.sock)
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("shell loop: %v %s", err, out)
		}
		dt := time.Since(t0)
		b.ReportMetric(float64(dt.Nanoseconds())/float64(n), "ns/op")
		rate := float64(n) / dt.Seconds()
		b.ReportMetric(rate, "ops/s")
		if promLoop > 0 && isOetp {
			// oetp against the floor measured just before it in this round.
			b.ReportMetric(rate/promLoop, "x-floor-prom")
		}
		return rate
	}
	read := "rmem read --iface eth0 --peer " + netServer + " --addr 0x10"
	// The floors first: the same loop starting /bin/true (the shell's fork
	// and exec), a hello-world Go binary, a Go binary that links only
	// client_golang, and oetp for nothing else.
	run("shell-rmem-read/bin-true", func(b *testing.B) {
		promLoop = 0 // a new round: no floor yet
		shellLoop(b, "/bin/true")
	})
	run("shell-rmem-read/floor-go-hello", func(b *testing.B) { shellLoop(b, floorHello) })
	run("shell-rmem-read/floor-go-client_golang", func(b *testing.B) { promLoop = shellLoop(b, floorProm) })
	// All the libraries the team's rules name that oetp links (pcapgo,
	// cobra, toml, progressbar, netlink, x/sys and client_golang).
	run("shell-rmem-read/floor-go-team-libs", func(b *testing.B) {
		r := shellLoop(b, floorTeam)
		if promLoop > 0 {
			b.ReportMetric(r/promLoop, "x-floor-prom")
		}
	})
	run("shell-rmem-read/oetp-version", func(b *testing.B) { shellLoop(b, "version") })
	run("shell-rmem-read/hub", func(b *testing.B) { shellLoop(b, read) })
	run("shell-rmem-read/no-hub", func(b *testing.B) { shellLoop(b, read+" --no-hub --mac "+benchRMEMMAC.String()) })

	run("batch1000/in-process", func(b *testing.B) {
		for b.Loop() {
			for i := range 1000 {
				if _, err := rmemEP.RMEMRead(ctx, 0, uint32(4*(i%256))); err != nil {
					b.Fatal(err)
				}
			}
		}
		opsPerSec(b, 1000)
	})
	run("batch1000/go-client", func(b *testing.B) {
		for b.Loop() {
			bt := dev.NewBatch()
			for i := range 1000 {
				bt.Read(uint32(4 * (i % 256)))
			}
			if err := bt.Run(); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1000)
	})
	run("batch1000/python", func(b *testing.B) { python(b, "batch", max(b.N, 5)) })

	run("write64MiB/in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := dmaEP.DMAWrite(ctx, 0, 0x1000000, data); err != nil {
				b.Fatal(err)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/oetp-dma-write", func(b *testing.B) {
		for b.Loop() {
			out, errOut, code := oetpIn(b, f.bin, f.tn.Host(1), "dma", "write", "--iface", "eth0", "--mac", benchDMAMAC.String(),
				"--peer", netServer, "--addr", "0x1000000", "--in", in, "--timeout", "1s")
			if code != 0 {
				b.Fatalf("oetp dma write: %s %s", out, errOut)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/go-client", func(b *testing.B) {
		for b.Loop() {
			if err := dev.WriteBlock(0x1000000, data); err != nil {
				b.Fatal(err)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/python", func(b *testing.B) {
		// At least 3 blocks, as the Go rows' own loops time several (the
		// benchmark's first call, b.N = 1, timed one block: one sample).
		n := max(b.N, 3)
		secs := python(b, "write_block", n)
		b.ReportMetric(float64(n)*float64(len(data))/secs/1e6, "MB/s")
	})
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("OETP_BENCH_ROUNDS")); err == nil && v > 1 {
		rounds = v
	}
	for range rounds {
		for _, r := range rows {
			b.Run(r.name, r.fn)
		}
	}
}

// pingPong runs n round trips of testdata/floor/pingpong between two
// processes, reports them and returns the mean round trip in ns.
func pingPong(b *testing.B, bin, dir string, n int) float64 {
	sock := filepath.Join(dir, "pingpong.sock")
	os.Remove(sock)
	echo := exec.Command(bin, "echo", sock)
	stdout, err := echo.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	echo.Stderr = os.Stderr
	if err := echo.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { echo.Process.Kill(); echo.Wait() }()
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		b.Fatalf("pingpong echo: %q %v", ready, err)
	}
	out, err := exec.Command(bin, "client", sock, strconv.Itoa(n)).Output()
	if err != nil {
		b.Fatalf("pingpong client: %v %s", err, out)
	}
	var r struct {
		Ops     int     `json:"ops"`
		Seconds float64 `json:"seconds"`
		P50     float64 `json:"p50_ns"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Ops != n {
		b.Fatalf("pingpong client: %v: %s", err, out)
	}
	ns := r.Seconds * 1e9 / float64(n)
	b.ReportMetric(ns, "ns/op")
	b.ReportMetric(r.P50, "p50-ns")
	return ns
}

// TestFloorPingPong runs BenchmarkHub's ping-pong floor for a few round
// trips, so the benchmark's floor program keeps building and answering.
func TestFloorPingPong(t *testing.T) {
	bin := testutil.BuildCommandPlain(t, "./testdata/floor/pingpong")
	sock := filepath.Join(t.TempDir(), "pp.sock")
	echo := exec.Command(bin, "echo", sock)
	stdout, err := echo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("echo: %q %v", ready, err)
	}
	out, err := exec.Command(bin, "client", sock, "10").Output()
	if err != nil {
		t.Fatalf("client: %v %s", err, out)
	}
	var r struct {
		Ops     int     `json:"ops"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Ops != 10 || r.Seconds <= 0 {
		t.Fatalf("client printed %s (%v)", out, err)
	}
	// The echo exits by itself once its client has gone.
	if err := echo.Wait(); err != nil {
		t.Fatalf("echo: %v", err)
	}
}
