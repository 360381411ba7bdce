package proto

import "encoding/binary"

// GroupWrite writes one block to every device of a group the hub's
// configuration defines ([[group]]), with a single group DMA write paced at
// the slowest member's measured time per fragment, and with GroupVerify
// reads every member back and repairs it (docs/replication.md). The header's
// handle is 0. Body: u8 flags, str16 group name, u32 address, the data (the
// rest of the body, 1..MaxBlock bytes). The reply's result is a GroupResult
// in JSON, also when the status reports a failure (a member that could not
// be verified: its CSR code, the maybe-executed flag, the member named).
const GroupWrite uint8 = 0x14

// GroupVerify in GROUP_WRITE's flags: read every member back and repair it.
const GroupVerify uint8 = 1

// AppendGroupWrite appends a GROUP_WRITE request's body to b.
func AppendGroupWrite(b []byte, name string, addr uint32, verify bool, data []byte) []byte {
	var flags uint8
	if verify {
		flags |= GroupVerify
	}
	b = append(b, flags)
	b = AppendStr16(b, name)
	b = binary.LittleEndian.AppendUint32(b, addr)
	return append(b, data...)
}

// GroupResult is the result of GROUP_WRITE.
type GroupResult struct {
	Group     string `json:"group"`
	MAC       string `json:"mac"` // the group address
	Addr      uint32 `json:"addr"`
	Bytes     uint64 `json:"bytes"`     // bytes of the group write completed (sent)
	Fragments int    `json:"fragments"` // its fragments sent
	// Delivery is "verified" when every member was read back equal,
	// else "unconfirmed".
	Delivery string        `json:"delivery"`
	Pacing   GroupPacing   `json:"pacing"`
	Members  []GroupMember `json:"members"`
}

// GroupPacing is how the group write was paced: the interval between its
// frames, the slowest member's median probe round trip times Margin.
type GroupPacing struct {
	Source     string       `json:"source"` // "members"
	IntervalUS float64      `json:"interval_us"`
	Margin     float64      `json:"margin"`
	Slowest    string       `json:"slowest"` // the slowest member's device name
	Probes     []GroupProbe `json:"probes"`
	// ChecksUS are the round trips of the slowest member's checks between
	// runs of fragments (replicate.Run); RaisedToUS the interval they
	// raised IntervalUS to, 0 when none did.
	ChecksUS   []float64 `json:"checks_us,omitempty"`
	RaisedToUS float64   `json:"raised_to_us,omitempty"`
}

// GroupProbe is one member's probes: unicast writes of the first fragment.
type GroupProbe struct {
	Device        string    `json:"device"`
	Member        string    `json:"member"` // its MAC
	RoundTripsUS  []float64 `json:"round_trips_us"`
	PerFragmentUS float64   `json:"per_fragment_us"`
}

// GroupMember is one member's verification (GroupVerify): State is
// "verified", "repaired" (fragments differed and are now proved equal) or
// "failed" (Error, ErrorCode say why); "unverified" without GroupVerify.
type GroupMember struct {
	Device            string          `json:"device"`
	Member            string          `json:"member"`
	State             string          `json:"state"`
	Fragments         int             `json:"fragments"`
	FragmentsChecked  int             `json:"fragments_checked"`
	FragmentsRepaired int             `json:"fragments_repaired"`
	Repaired          []GroupFragment `json:"repaired"`
	Error             string          `json:"error,omitempty"`
	ErrorCode         uint8           `json:"error_code,omitempty"`
}

// GroupFragment is a fragment of the group write, repaired by unicast.
type GroupFragment struct {
	Index int    `json:"index"`
	Addr  uint32 `json:"addr"`
	Len   uint32 `json:"len"`
}
