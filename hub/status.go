package hub

import (
	"os"
	"time"

	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/wire"
)

// Status returns the hub's status and counters.
func (h *Hub) Status() proto.Status {
	s := proto.Status{PID: os.Getpid(), UptimeS: time.Since(h.start).Seconds(), Clients: h.clients.Load(),
		Accepted: h.accepted.Load(), Malformed: h.malformed.Load()}
	for _, d := range h.devs {
		ds := proto.DeviceStatus{Name: d.Config.Name, Iface: d.Config.Iface, MAC: d.Config.MAC.String(),
			Local: map[string]string{}, AddressTable: d.Config.AddressTable, Transport: d.Config.Transport.String(),
			Ops: map[string]proto.OpStatus{}, Endpoints: map[string]proto.EndpointStat{}}
		if d.table != nil {
			ds.Nodes = len(d.table.nodes())
		}
		for k := range numKinds {
			ds.Local[Kind(k).String()] = d.Config.Local[k].String()
			st := d.eps[k].Stats()
			es := proto.EndpointStat{MAC: d.Config.Local[k].String(), TxFrames: st.TxFrames, RxFrames: st.RxFrames,
				Timeouts: st.Timeouts, Late: st.DropLateResponse, Unmatched: st.DropUnmatchedResponse}
			ps := d.eps[k].PeerStats(0)
			es.Retries = ps.Retries
			if ts, ok := d.nodes[k].Transport(); ok {
				es.Retransmitted = ts.Retransmitted
			}
			us := func(d time.Duration) float64 { return float64(d) / 1e3 }
			es.RTTMinUS, es.RTTMeanUS, es.RTTMaxUS = us(ps.RTTMin), us(ps.RTTMean), us(ps.RTTMax)
			es.KernelDrops = d.nodes[k].Link.KernelDrops()
			ds.Endpoints[Kind(k).String()] = es
		}
		for op := range numOps {
			o := proto.OpStatus{Count: d.m.ops[op].Load(), Bytes: d.m.bytes[op].Load()}
			if o.Count > 0 {
				o.MeanUS = float64(d.m.nanos[op].Load()) / float64(o.Count) / 1e3
			}
			for c := 1; c < 16; c++ {
				if n := d.m.errs[op][c].Load(); n > 0 {
					if o.Errors == nil {
						o.Errors = map[string]uint64{}
					}
					o.Errors[wire.Code(c).String()] = n
				}
			}
			ds.Ops[opNames[op]] = o
		}
		s.Devices = append(s.Devices, ds)
	}
	return s
}

func (h *Hub) isClosed() bool { return h.closing.Load() }

func (h *Hub) deviceNames() string {
	s := ""
	for i, d := range h.devs {
		if i > 0 {
			s += ", "
		}
		s += d.Config.Name
	}
	return s
}

// Refused, Busy, Stalls, Buffered and BufferedPeak are the bounds'
// counters: connections refused at the cap, requests refused by the memory
// budget, requests abandoned or blocks aborted at the read deadline, the
// bytes of the budget held now and the most held at once.
func (h *Hub) Refused() uint64     { return h.capRefused.Load() }
func (h *Hub) Busy() uint64        { return h.busy.Load() }
func (h *Hub) Stalls() uint64      { return h.stalls.Load() }
func (h *Hub) Buffered() int64     { return h.mem.inUse() }
func (h *Hub) BufferedPeak() int64 { return h.mem.maxUsed() }
