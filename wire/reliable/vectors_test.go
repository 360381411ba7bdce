package reliable_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// update rewrites the golden files from the encoders:
//
//	go test ./wire/reliable -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/vectors.json and testdata/vectors.pcap from the encoders")

const (
	vectorsJSON = "testdata/vectors.json"
	vectorsPcap = "testdata/vectors.pcap"
)

var (
	macA  = wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0a}
	macB  = wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0b}
	group = wire.MAC{0x03, 0x0e, 0x0c, 0, 0, 0x01}
)

// vector is one golden frame with the outcome a receiver must reach.
type vector struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	FrameHex    string   `json:"frame_hex"`
	FrameLen    int      `json:"frame_len"`
	MaxFrame    int      `json:"max_frame"`
	Problem     string   `json:"problem"`
	Header      *header  `json:"header,omitempty"`
	Syn         *syn     `json:"syn,omitempty"`
	Inner       *inner   `json:"inner,omitempty"`
	CRC         *uint32  `json:"crc,omitempty"`
	CRCOK       *bool    `json:"crc_ok,omitempty"`
	Corrupt     *bool    `json:"corrupt,omitempty"`
	Flags       []string `json:"flags,omitempty"`
}

type header struct {
	Flags   uint8  `json:"flags"`
	Length  uint16 `json:"length"`
	Session uint32 `json:"session"`
	PSN     uint32 `json:"psn"`
	APSN    uint32 `json:"apsn"`
	Credits uint16 `json:"credits"`
}

type syn struct {
	Depth      uint16 `json:"depth"`
	Congestion uint8  `json:"congestion"`
	MaxFrame   uint16 `json:"max_frame"`
}

// inner is the v1 frame a DATA frame carries, as reliable.Decapsulate
// gives it.
type inner struct {
	FrameHex string `json:"frame_hex"`
	Cmd      string `json:"cmd"`
	Problem  string `json:"problem"`
}

func flagNames(f reliable.Flags) []string {
	var out []string
	for i, n := range []string{"DATA", "ACK", "NAK", "SYN", "RST", "RSP", "0x40", "0x80"} {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// data builds a DATA frame around a v1 frame the wire encoders made.
func data(h reliable.Header, v1 func(b []byte) []byte) []byte {
	b := make([]byte, reliable.Headroom, 9000)
	return reliable.Encapsulate(v1(b), h)
}

func reseal(f []byte) []byte {
	n := len(f) - reliable.TrailerLen
	binary.LittleEndian.PutUint32(f[n:], reliable.CRC(f[:n]))
	return f
}

type built struct {
	name, desc string
	frame      []byte
	maxFrame   int
}

func buildFrames() []built {
	const session = 0x5e551011
	req := reliable.Header{Flags: reliable.FlagAck, Session: session, PSN: 0x100, APSN: 0x100}
	rsp := reliable.Header{Flags: reliable.FlagAck | reliable.FlagRsp, Session: session, PSN: 0x100, APSN: 0x101, Credits: 32}
	var out []built
	add := func(name, desc string, f []byte) { out = append(out, built{name, desc, f, 8192}) }

	add("syn", "Initiator A opens session 0x5e551011 to B with initial PSN 0x100: depth 32, AIMD, A receives frames up to 8192 bytes. Padded to 60 bytes by a NIC would be accepted too.",
		reliable.AppendSyn(nil, macB, macA, reliable.Header{Flags: reliable.FlagSyn, Session: session, PSN: 0x100},
			reliable.Syn{Depth: 32, Congestion: reliable.CongestionAIMD, MaxFrame: 8192}))
	add("syn_ack", "Responder B accepts: APSN = the initial PSN, 16 credits, depth 16 (the session uses min(32, 16)).",
		reliable.AppendSyn(nil, macA, macB, reliable.Header{Flags: reliable.FlagSyn | reliable.FlagAck | reliable.FlagRsp, Session: session, APSN: 0x100, Credits: 16},
			reliable.Syn{Depth: 16, Congestion: reliable.CongestionAIMD, MaxFrame: 8192}))
	add("rmem_read_req", "RMEM_READ_REQ (Request ID 0x11223344, address 0x1000) as PSN 0x100; APSN 0x100: no response outstanding before it.",
		data(req, func(b []byte) []byte { return wire.AppendRMEMReadReq(b, macB, macA, 0x11223344, 0x1000) }))
	add("rmem_read_rsp", "Its RMEM_READ_RSP (data 0xCAFEF00D) with PSN 0x100, the cumulative ACK APSN 0x101 and 32 credits piggy-backed.",
		data(rsp, func(b []byte) []byte { return wire.AppendRMEMReadRsp(b, macA, macB, 0x11223344, 0xCAFEF00D) }))
	w := req
	w.PSN = 0x101
	add("rmem_write_req", "RMEM_WRITE_REQ, BitEnable 0x0000FF00, as PSN 0x101.",
		data(w, func(b []byte) []byte {
			return wire.AppendRMEMWriteReq(b, macB, macA, 0x11223345, 0x1004, 0xFF00, 0xAB00)
		}))
	wr := rsp
	wr.PSN, wr.APSN = 0x101, 0x102
	add("rmem_write_rsp", "RMEM_WRITE_RSP for PSN 0x101, the shortest DATA frame (58 bytes; a NIC pads it to 60).",
		data(wr, func(b []byte) []byte { return wire.AppendRMEMWriteRsp(b, macA, macB, 0x11223345) }))
	d := req
	d.PSN, d.APSN = 0x102, 0x101
	add("dma_write_req", "DMA_WRITE_REQ of 5 bytes to 0x100000 (word padding and EndOfData as v1) as PSN 0x102; APSN 0x101: the response to 0x100 has arrived.",
		data(d, func(b []byte) []byte {
			return wire.AppendDMAWriteReq(b, macB, macA, 0x11223346, 0x100000, testutil.Pattern(5, 0xb0))
		}))
	dr := rsp
	dr.PSN, dr.APSN = 0x102, 0x103
	add("error_rsp", "ERROR_RSP cause 6 (write SLVERR) answering PSN 0x102: v1 errors travel as v1 responses, acknowledged like any other.",
		data(dr, func(b []byte) []byte { return wire.AppendErrorRsp(b, macA, macB, 0x11223346, wire.CauseAXIWrSlverr) }))
	rr := req
	rr.PSN = 0x103
	add("dma_read_req", "DMA_READ_REQ of 16 bytes as PSN 0x103.",
		data(rr, func(b []byte) []byte { return wire.AppendDMAReadReq(b, macB, macA, 0x11223347, 0x200000, 16) }))
	rp := rsp
	rp.PSN, rp.APSN = 0x103, 0x104
	add("dma_read_rsp", "DMA_READ_RSP with 16 bytes for PSN 0x103: the Length field gives the PDU's end, which v1 only knows from the request.",
		data(rp, func(b []byte) []byte {
			return wire.AppendDMAReadRsp(b, macA, macB, 0x11223347, testutil.Pattern(16, 0x40))
		}))
	add("ack", "Pure cumulative ACK from B: every PSN before 0x104 received, 32 credits.",
		reliable.AppendControl(nil, macA, macB, reliable.Header{Flags: reliable.FlagAck | reliable.FlagRsp, Session: session, APSN: 0x104, Credits: 32}))
	add("nak", "NAK from B: PSN 0x105 is missing (a later one arrived); resend from 0x105.",
		reliable.AppendControl(nil, macA, macB, reliable.Header{Flags: reliable.FlagAck | reliable.FlagNak | reliable.FlagRsp, Session: session, APSN: 0x105, Credits: 32}))
	add("initiator_ack", "Pure ACK from A: the responses to every PSN before 0x105 arrived.",
		reliable.AppendControl(nil, macB, macA, reliable.Header{Flags: reliable.FlagAck, Session: session, APSN: 0x105}))
	add("rst", "RST from B: it has no session 0x0bad0bad (it restarted); PSN echoes the frame that found none.",
		reliable.AppendControl(nil, macA, macB, reliable.Header{Flags: reliable.FlagRst | reliable.FlagRsp, Session: 0x0bad0bad, PSN: 0x77}))
	padded := append(reliable.AppendControl(nil, macA, macB, reliable.Header{Flags: reliable.FlagAck | reliable.FlagRsp, Session: session, APSN: 0x104, Credits: 32}), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	add("ack_padded", "The pure ACK padded to 60 bytes by a NIC: accepted, the padding is ignored (the CRC precedes it).", padded)

	// Damaged frames.
	bad := bytes.Clone(out[2].frame)
	bad[40] ^= 0x01
	add("bad_crc", "rmem_read_req with one bit of its Address flipped: every cheap check passes, the CRC32C does not: a silent, counted drop.", bad)
	v := bytes.Clone(out[2].frame)
	v[reliable.Offset+1] = 2
	add("bad_version", "Version 2: dropped (counted), never answered.", reseal(v))
	r := bytes.Clone(out[2].frame)
	r[reliable.Offset+2] |= 0x40
	add("bad_reserved_flag", "Reserved flag bit 0x40 set: dropped.", reseal(r))
	nk := reliable.AppendControl(nil, macA, macB, reliable.Header{Flags: reliable.FlagAck | reliable.FlagNak, Session: session, APSN: 0x105})
	add("bad_nak_without_rsp", "A NAK without RSP: only a responder sends NAKs; dropped.", nk)
	tr := bytes.Clone(out[6].frame[:len(out[6].frame)-8])
	add("bad_truncated", "dma_write_req cut 8 bytes short: Length says more than the frame holds.", tr)
	tl := append(bytes.Clone(out[6].frame), 0, 0, 0, 0)
	add("bad_trailing", "dma_write_req with 4 extra bytes after the CRC (not the 60-byte padding): dropped.", tl)
	dl := reliable.AppendControl(nil, macB, macA, reliable.Header{Flags: reliable.FlagAck, Session: session, PSN: 0x100, APSN: 0x100})
	dl[reliable.Offset+2] |= byte(reliable.FlagData)
	add("bad_data_without_pdu", "DATA with Length 0: a DATA frame carries at least a 6-byte v1 PDU.", reseal(dl))
	add("runt", "37 bytes: shorter than a header and trailer.", bytes.Clone(out[10].frame[:37]))
	out = append(out, built{"too_long", "The 64-byte DMA write to a receiver whose ceiling is 60 bytes.", bytes.Clone(out[6].frame), 60})
	add("v1_frame", "A plain v1 RMEM_READ_REQ: Magic 0x0E, not the Discriminator: not a reliable frame; v1 handles it.",
		wire.AppendRMEMReadReq(nil, macB, macA, 1, 0x1000))
	g := reliable.AppendControl(nil, group, macA, reliable.Header{Flags: reliable.FlagAck, Session: session})
	add("group_ack", "A well-formed frame to a group address: the codec accepts it; receivers drop every reliable frame not addressed to their unicast MAC (group writes stay v1).", g)
	return out
}

func buildVectors() []vector {
	var vs []vector
	for _, b := range buildFrames() {
		v := vector{Name: b.name, Description: b.desc, FrameHex: hex.EncodeToString(b.frame), FrameLen: len(b.frame), MaxFrame: b.maxFrame}
		vs = append(vs, decode(v, b.frame))
	}
	return vs
}

// decode fills in the outcome of one frame with the package's decoder.
func decode(v vector, frame []byte) vector {
	f := bytes.Clone(frame)
	h, p := reliable.Parse(f, v.MaxFrame)
	if p == reliable.OK && !reliable.CheckCRC(f, h) {
		p = reliable.ProblemCRC
	}
	v.Problem = p.Name()
	if p == reliable.ProblemNotOurs || p == reliable.ProblemRunt {
		return v
	}
	if p == reliable.ProblemVersion {
		c := reliable.Corrupt(f)
		v.Corrupt = &c
		return v
	}
	v.Header = &header{Flags: uint8(h.Flags), Length: h.Length, Session: h.Session, PSN: h.PSN, APSN: h.APSN, Credits: h.Credits}
	v.Flags = flagNames(h.Flags)
	if p == reliable.OK || p == reliable.ProblemCRC {
		end := reliable.BodyOffset + int(h.Length)
		crc := binary.LittleEndian.Uint32(f[end:])
		ok := p == reliable.OK
		v.CRC, v.CRCOK = &crc, &ok
	} else {
		c := reliable.Corrupt(f)
		v.Corrupt = &c
	}
	if p != reliable.OK {
		return v
	}
	if h.Flags&reliable.FlagSyn != 0 {
		s, _ := reliable.ParseSyn(reliable.Body(f, h))
		v.Syn = &syn{Depth: s.Depth, Congestion: s.Congestion, MaxFrame: s.MaxFrame}
	}
	if h.Flags&reliable.FlagData != 0 {
		in := reliable.Decapsulate(f, h)
		cls := wire.Classify(in, 8192)
		if cls.Cmd == wire.DMAReadRsp {
			cls.Problem = wire.CheckDMAReadRsp(in, uint32(len(in)-wire.FrameLen(wire.DMAReadRsp, 0)))
		}
		v.Inner = &inner{FrameHex: hex.EncodeToString(in), Cmd: cls.Cmd.String(), Problem: cls.Problem.String()}
	}
	return v
}

func pcapOf(t testing.TB, vs []vector) []byte {
	frames := make([][]byte, len(vs))
	for i, v := range vs {
		frames[i], _ = hex.DecodeString(v.FrameHex)
	}
	return pcaptest.Golden(t, frames)
}

// TestGoldenVectors regenerates every vector with the encoders and the
// decoder and compares with testdata/vectors.json and vectors.pcap byte for
// byte.
func TestGoldenVectors(t *testing.T) {
	vs := buildVectors()
	gotJSON, gotPcap := testutil.GoldenJSON(t, vs), pcapOf(t, vs)
	const regen = "go test ./wire/reliable -run Golden -update"
	if wantJSON, same := testutil.Golden(t, vectorsJSON, gotJSON, *update, regen); !same {
		var want []vector
		_ = json.Unmarshal(wantJSON, &want)
		t.Errorf("vectors.json differs (-file +code):\n%s\nIf intended: %s", cmp.Diff(want, vs), regen)
	}
	if _, same := testutil.Golden(t, vectorsPcap, gotPcap, *update, regen); !same {
		t.Errorf("vectors.pcap differs from the frames of vectors.json")
	}
}

// TestGoldenVectorsFromFile decodes the frames as stored (not as built) and
// checks the recorded outcomes, so the file stands on its own for other
// implementations.
func TestGoldenVectorsFromFile(t *testing.T) {
	b, err := os.ReadFile(vectorsJSON)
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	problems := map[string]bool{}
	for _, v := range vs {
		f, err := hex.DecodeString(v.FrameHex)
		if err != nil || len(f) != v.FrameLen {
			t.Fatalf("%s: bad frame_hex", v.Name)
		}
		got := decode(vector{Name: v.Name, Description: v.Description, FrameHex: v.FrameHex, FrameLen: v.FrameLen, MaxFrame: v.MaxFrame}, f)
		if d := cmp.Diff(v, got); d != "" {
			t.Errorf("%s (-file +decoder):\n%s", v.Name, d)
		}
		problems[v.Problem] = true
	}
	for _, p := range []string{"ok", "not_ours", "runt", "version", "flags", "too_long", "length", "crc"} {
		if !problems[p] {
			t.Errorf("no vector with problem %q", p)
		}
	}
}
