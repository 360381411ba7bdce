package proto

// Status is the hub's state as STATUS returns it (JSON).
type Status struct {
	PID       int            `json:"pid"`
	UptimeS   float64        `json:"uptime_s"`
	Clients   int64          `json:"clients"`
	Accepted  uint64         `json:"connections"`
	Malformed uint64         `json:"malformed_requests"`
	Devices   []DeviceStatus `json:"devices"`
}

// DeviceStatus is one device's part of Status.
type DeviceStatus struct {
	Name         string                  `json:"name"`
	Iface        string                  `json:"iface"`
	MAC          string                  `json:"mac"`
	Local        map[string]string       `json:"local"`
	AddressTable string                  `json:"address_table,omitempty"`
	Transport    string                  `json:"transport"`
	Nodes        int                     `json:"nodes,omitempty"`
	Ops          map[string]OpStatus     `json:"ops"`
	Endpoints    map[string]EndpointStat `json:"endpoints"`
}

// OpStatus counts one kind of operation.
type OpStatus struct {
	Count  uint64            `json:"count"`
	Errors map[string]uint64 `json:"errors,omitempty"` // by CSR mnemonic
	Bytes  uint64            `json:"bytes,omitempty"`
	MeanUS float64           `json:"mean_us"`
}

// EndpointStat is a few counters of one of the device's endpoints.
type EndpointStat struct {
	MAC         string `json:"mac"`
	TxFrames    uint64 `json:"tx_frames"`
	RxFrames    uint64 `json:"rx_frames"`
	Timeouts    uint64 `json:"timeouts"`
	Late        uint64 `json:"late_responses"`
	Unmatched   uint64 `json:"unmatched_responses"`
	KernelDrops uint64 `json:"kernel_drops"`
	Retries     uint64 `json:"retries"`
	// Retransmitted counts the reliable transport's retransmissions (0 for v1).
	Retransmitted uint64 `json:"transport_retransmitted"`
	// RTT of the successful first tries, in µs (0 before any sample).
	RTTMinUS  float64 `json:"rtt_min_us"`
	RTTMeanUS float64 `json:"rtt_mean_us"`
	RTTMaxUS  float64 `json:"rtt_max_us"`
}
