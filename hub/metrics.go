package hub

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// Operation kinds counted per device.
const (
	opRead = iota
	opWrite
	opReadBlock
	opWriteBlock
	numOps
)

var opNames = [numOps]string{"read", "write", "read_block", "write_block"}

// devMetrics are a device's counters: atomics for `oetp hub status`, and
// the Prometheus series, resolved once so an operation costs no label
// lookup.
type devMetrics struct {
	ops   [numOps]atomic.Uint64
	errs  [numOps][16]atomic.Uint64
	bytes [numOps]atomic.Uint64
	nanos [numOps]atomic.Uint64

	pOps   [numOps]prometheus.Counter
	pErrs  [numOps][16]prometheus.Counter
	pBytes [numOps]prometheus.Counter
	pSecs  [numOps]prometheus.Observer
}

func (m *devMetrics) done(op int, t0 time.Time, err error, bytes uint64) {
	d := time.Since(t0)
	m.ops[op].Add(1)
	m.nanos[op].Add(uint64(d))
	if bytes > 0 {
		m.bytes[op].Add(bytes)
	}
	if m.pOps[op] != nil {
		m.pOps[op].Inc()
		m.pSecs[op].Observe(d.Seconds())
		if bytes > 0 {
			m.pBytes[op].Add(float64(bytes))
		}
	}
	if err != nil {
		c := endpoint.CodeOf(err) & 0xF
		m.errs[op][c].Add(1)
		if m.pErrs[op][c] != nil {
			m.pErrs[op][c].Inc()
		}
	}
}

// metrics is the hub's Prometheus registry.
type metrics struct {
	reg   *prometheus.Registry
	ops   *prometheus.CounterVec
	errs  *prometheus.CounterVec
	bytes *prometheus.CounterVec
	secs  *prometheus.HistogramVec
}

func newMetrics(h *Hub) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.ops = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oetp_hub_operations_total",
		Help: "Device operations run by the hub, by device and operation (read, write, read_block, write_block; a batch counts each)."}, []string{"device", "op"})
	m.errs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oetp_hub_operation_errors_total",
		Help: "Failed device operations by device, operation and CSR code mnemonic."}, []string{"device", "op", "code"})
	m.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "oetp_hub_block_bytes_total",
		Help: "Bytes moved by DMA block operations, by device and operation."}, []string{"device", "op"})
	m.secs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "oetp_hub_operation_seconds",
		Help:    "Time of a device operation in the hub, from the endpoint call to its completion: the round trip (RTT) for RMEM.",
		Buckets: []float64{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3, 0.1, 0.5, 1, 5}}, []string{"device", "op"})
	clients := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oetp_hub_clients", Help: "Clients connected now."},
		func() float64 { return float64(h.clients.Load()) })
	conns := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "oetp_hub_connections_total", Help: "Client connections accepted."},
		func() float64 { return float64(h.accepted.Load()) })
	bad := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "oetp_hub_malformed_requests_total", Help: "Requests answered BAD_MESSAGE, UNKNOWN_TYPE, NO_DEVICE or AUTH."},
		func() float64 { return float64(h.malformed.Load()) })
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	bounds := []prometheus.Collector{
		counter("oetp_hub_refused_connections_total", "Connections refused at the connection cap (max_clients), with a BUSY notice.", &h.capRefused),
		counter("oetp_hub_busy_total", "Requests refused BUSY because the memory budget (memory_budget) stayed in use; they did not run.", &h.busy),
		counter("oetp_hub_too_large_total", "Requests refused TOO_LARGE (max_message, or the block limits).", &h.tooLarge),
		counter("oetp_hub_idle_closed_total", "Connections closed after idle_timeout without a request.", &h.idleClosed),
		counter("oetp_hub_stalled_total", "Requests whose bytes stopped arriving for read_deadline: abandoned, or a streamed block aborted.", &h.stalls),
		counter("oetp_hub_accept_errors_total", "Errors accepting connections (out of file descriptors).", &h.acceptErrs),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oetp_hub_buffered_bytes", Help: "Bytes of the memory budget held by requests now."},
			func() float64 { return float64(h.mem.inUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oetp_hub_buffered_bytes_peak", Help: "The most bytes of the memory budget held at once since the hub started."},
			func() float64 { return float64(h.mem.maxUsed()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oetp_hub_memory_budget_bytes", Help: "The memory budget for buffered request and reply data (memory_budget)."},
			func() float64 { return float64(h.lim.MemoryBudget) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "oetp_hub_max_clients", Help: "The connection cap (max_clients)."},
			func() float64 { return float64(h.lim.MaxClients) }),
	}
	m.reg.MustRegister(append([]prometheus.Collector{m.ops, m.errs, m.bytes, m.secs, clients, conns, bad, newLinkCollector(h)}, bounds...)...)
	return m
}

func (m *metrics) addDevice(d *Device) {
	name := d.Config.Name
	for op := range numOps {
		d.m.pOps[op] = m.ops.WithLabelValues(name, opNames[op])
		d.m.pSecs[op] = m.secs.WithLabelValues(name, opNames[op])
		if op >= opReadBlock {
			d.m.pBytes[op] = m.bytes.WithLabelValues(name, opNames[op])
		}
		for c := 1; c < 16; c++ {
			d.m.pErrs[op][c] = m.errs.WithLabelValues(name, opNames[op], wire.Code(c).String())
		}
	}
}

// MetricsHandler serves the Prometheus text format.
func (h *Hub) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(h.met.reg, promhttp.HandlerOpts{})
}

// linkCollector reports the endpoints' and links' own counters at scrape
// time. Its descriptions are made with the hub's registry, not at package
// init: every oetp command links this package, and only the hub uses them,
// so a one-shot command's start does not pay for them.
type linkCollector struct {
	h                                                                            *Hub
	descKernelDrops, descTimeouts, descLate, descRetries, descRTT, descTransport *prometheus.Desc
	descFrames                                                                   *prometheus.Desc
}

func newLinkCollector(h *Hub) *linkCollector {
	return &linkCollector{h: h,
		descKernelDrops: prometheus.NewDesc("oetp_hub_kernel_drops_total",
			"Frames for a local MAC that the kernel dropped because the socket's receive queue was full (PACKET_STATISTICS).", []string{"device", "kind", "mac"}, nil),
		descTimeouts: prometheus.NewDesc("oetp_hub_endpoint_timeouts_total",
			"Initiated operations of an endpoint that ended in TIMEOUT.", []string{"device", "kind", "mac"}, nil),
		descLate: prometheus.NewDesc("oetp_hub_late_responses_total",
			"Responses that arrived after their request had timed out.", []string{"device", "kind", "mac"}, nil),
		descRetries: prometheus.NewDesc("oetp_hub_retries_total",
			"Retransmissions of operations and fragments by an endpoint of the hub (the device's retries policy).", []string{"device", "kind", "mac"}, nil),
		descRTT: prometheus.NewDesc("oetp_hub_rtt_seconds",
			"Round-trip time of an endpoint's successful first tries (min, mean, max since start; srtt, the RFC 6298 smoothed estimate).", []string{"device", "kind", "mac", "stat"}, nil),
		descTransport: prometheus.NewDesc("oetp_hub_transport_retransmits_total",
			"Retransmissions by the reliable transport beneath an endpoint (transport = reliable or auto).", []string{"device", "kind", "mac"}, nil),
		descFrames: prometheus.NewDesc("oetp_hub_frames_total",
			"Frames sent (tx) and received (rx) by an endpoint of the hub.", []string{"device", "kind", "mac", "dir"}, nil),
	}
}

func (c *linkCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.descKernelDrops
	ch <- c.descTimeouts
	ch <- c.descLate
	ch <- c.descFrames
	ch <- c.descRetries
	ch <- c.descRTT
	ch <- c.descTransport
}

func (c *linkCollector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.h.devs {
		for k := range numKinds {
			ep := d.eps[k]
			if ep == nil {
				continue
			}
			lv := []string{d.Config.Name, Kind(k).String(), d.Config.Local[k].String()}
			st := ep.Stats()
			ch <- prometheus.MustNewConstMetric(c.descTimeouts, prometheus.CounterValue, float64(st.Timeouts), lv...)
			ch <- prometheus.MustNewConstMetric(c.descLate, prometheus.CounterValue, float64(st.DropLateResponse), lv...)
			ch <- prometheus.MustNewConstMetric(c.descFrames, prometheus.CounterValue, float64(st.TxFrames), append(lv, "tx")...)
			ch <- prometheus.MustNewConstMetric(c.descFrames, prometheus.CounterValue, float64(st.RxFrames), append(lv, "rx")...)
			if ts, ok := d.nodes[k].Transport(); ok {
				ch <- prometheus.MustNewConstMetric(c.descTransport, prometheus.CounterValue, float64(ts.Retransmitted), lv...)
			}
			ps := ep.PeerStats(0)
			ch <- prometheus.MustNewConstMetric(c.descRetries, prometheus.CounterValue, float64(ps.Retries), lv...)
			if ps.RTTSamples > 0 {
				for _, x := range []struct {
					stat string
					v    time.Duration
				}{{"min", ps.RTTMin}, {"mean", ps.RTTMean}, {"max", ps.RTTMax}, {"srtt", ps.SRTT}} {
					ch <- prometheus.MustNewConstMetric(c.descRTT, prometheus.GaugeValue, x.v.Seconds(), append(lv, x.stat)...)
				}
			}
			ch <- prometheus.MustNewConstMetric(c.descKernelDrops, prometheus.CounterValue, float64(d.nodes[k].Link.KernelDrops()), lv...)
		}
	}
}
