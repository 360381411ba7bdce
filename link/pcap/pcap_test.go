package pcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/openenoc/oetp/link/pcap"
)

var base = time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)

var formats = []pcap.Format{pcap.PcapNG, pcap.Classic}

// resolution is the timestamp unit of a format as Writer writes it.
func resolution(f pcap.Format) time.Duration {
	if f == pcap.Classic {
		return time.Microsecond
	}
	return time.Nanosecond
}

// testFrames returns frames of assorted sizes with distinct contents.
func testFrames() [][]byte {
	var frames [][]byte
	for i, size := range []int{14, 17, 60, 61, 64, 1514, 8192, 9014} {
		f := make([]byte, size)
		copy(f, []byte{0x02, 0x0e, 0x0c, 0, 0, 2, 0x02, 0x0e, 0x0c, 0, 0, 1, 0x88, 0xb5})
		for j := 14; j < size; j++ {
			f[j] = byte(i*31 + j)
		}
		frames = append(frames, f)
	}
	return frames
}

func stamp(i int) time.Time { return base.Add(time.Duration(i) * 1001 * time.Microsecond) }

func writeFile(t testing.TB, f pcap.Format, snaplen int, frames [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriterFormat(&buf, f, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		if err := w.WritePacket(stamp(i), fr); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestClassicBytes checks the classic file byte by byte.
func TestClassicBytes(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriterFormat(&buf, pcap.Classic, 65535)
	if err != nil {
		t.Fatal(err)
	}
	if w.Snaplen() != 65535 || w.Format() != pcap.Classic {
		t.Errorf("Snaplen() = %d, Format() = %v", w.Snaplen(), w.Format())
	}
	ts := time.Unix(0x65432100, 987654321)
	if err := w.WritePacket(ts, []byte{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, // magic a1b2c3d4 LE, version 2.4
		0, 0, 0, 0, 0, 0, 0, 0, // thiszone, sigfigs
		0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // snaplen 65535, LINKTYPE_ETHERNET
		0x00, 0x21, 0x43, 0x65, 0x06, 0x12, 0x0f, 0x00, // ts 0x65432100 s, 987654 µs (0x0f1206)
		0x05, 0, 0, 0, 0x05, 0, 0, 0, // incl 5, orig 5
		1, 2, 3, 4, 5,
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("file =\n% x\nwant\n% x", buf.Bytes(), want)
	}
}

// TestPcapNGBlocks checks the pcapng structure: a Section Header Block, an
// Interface Description Block for LINKTYPE_ETHERNET with the snaplen, then
// one Enhanced Packet Block per frame with the nanosecond timestamp.
func TestPcapNGBlocks(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Format() != pcap.PcapNG || w.Snaplen() != pcap.MaxSnaplen {
		t.Errorf("NewWriter: format %v, snaplen %d; want pcapng, %d", w.Format(), w.Snaplen(), pcap.MaxSnaplen)
	}
	ts := time.Unix(1700000000, 123456789)
	if err := w.WritePacket(ts, []byte{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	b, le := buf.Bytes(), binary.LittleEndian
	var types []uint32
	var epb []byte
	for off := 0; off < len(b); {
		typ, n := le.Uint32(b[off:]), int(le.Uint32(b[off+4:]))
		if n < 12 || n%4 != 0 || off+n > len(b) || le.Uint32(b[off+n-4:]) != uint32(n) {
			t.Fatalf("block at %d: type %#x length %d of a %d-byte file", off, typ, n, len(b))
		}
		types = append(types, typ)
		switch typ {
		case 1: // IDB: link type, reserved, snaplen
			if lt, snap := le.Uint16(b[off+8:]), le.Uint32(b[off+12:]); lt != 1 || snap != pcap.MaxSnaplen {
				t.Errorf("IDB: link type %d, snaplen %d", lt, snap)
			}
		case 6:
			epb = b[off : off+n]
		}
		off += n
	}
	if fmt.Sprint(types) != "[168627466 1 6]" || le.Uint32(b[8:]) != 0x1a2b3c4d {
		t.Fatalf("blocks %v, byte-order magic %#x; want SHB, IDB, EPB", types, le.Uint32(b[8:]))
	}
	stampNS := uint64(le.Uint32(epb[12:]))<<32 | uint64(le.Uint32(epb[16:]))
	if stampNS != uint64(ts.UnixNano()) || le.Uint32(epb[20:]) != 5 || le.Uint32(epb[24:]) != 5 || !bytes.Equal(epb[28:33], []byte{1, 2, 3, 4, 5}) {
		t.Errorf("EPB % x", epb)
	}
}

func TestRoundTrip(t *testing.T) {
	frames := testFrames()
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			for _, snaplen := range []int{0, 100} {
				data := writeFile(t, f, snaplen, frames)
				r, err := pcap.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if r.Format() != f {
					t.Errorf("Format() = %v", r.Format())
				}
				g := independentReader(t, f, data)
				for i, want := range frames {
					if snaplen > 0 {
						want = want[:min(len(want), snaplen)]
					}
					ts, got, err := r.Next()
					if err != nil {
						t.Fatalf("record %d: %v", i+1, err)
					}
					wantTS := stamp(i).Truncate(resolution(f))
					if !bytes.Equal(got, want) || r.OrigLen() != len(frames[i]) || !ts.Equal(wantTS) || r.LinkType() != pcap.LinkTypeEthernet {
						t.Errorf("snaplen %d record %d: %d bytes (orig %d) at %v, link type %v; want %d of %d bytes at %v",
							snaplen, i+1, len(got), r.OrigLen(), ts, r.LinkType(), len(want), len(frames[i]), wantTS)
					}
					gd, ci, err := g.ReadPacketData()
					if err != nil || !bytes.Equal(gd, want) || ci.Length != len(frames[i]) || !ci.Timestamp.Equal(wantTS) {
						t.Errorf("gopacket record %d: %d bytes, len %d, %v, %v", i+1, len(gd), ci.Length, ci.Timestamp, err)
					}
				}
				for range 2 {
					if _, d, err := r.Next(); err != io.EOF || d != nil {
						t.Fatalf("Next at end = %v, %v; want nil, io.EOF", d, err)
					}
				}
			}
		})
	}
}

// independentReader opens data with pcapgo directly.
func independentReader(t *testing.T, f pcap.Format, data []byte) gopacket.PacketDataSource {
	t.Helper()
	if f == pcap.Classic {
		g, err := pcapgo.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// handmade builds a one-record classic pcap file in the given byte order
// and resolution, with timestamp 1700000000 s plus frac units.
func handmade(order binary.ByteOrder, magic uint32, frac uint32, frame []byte) []byte {
	b := make([]byte, 24+16)
	order.PutUint32(b[0:], magic)
	order.PutUint16(b[4:], 2)
	order.PutUint16(b[6:], 4)
	order.PutUint32(b[16:], 65535)
	order.PutUint32(b[20:], 1)
	order.PutUint32(b[24:], 1700000000)
	order.PutUint32(b[28:], frac)
	order.PutUint32(b[32:], uint32(len(frame)))
	order.PutUint32(b[36:], uint32(len(frame)+4))
	return append(b, frame...)
}

func TestReaderClassicVariants(t *testing.T) {
	frame := testFrames()[2]
	for _, tc := range []struct {
		name  string
		order binary.ByteOrder
		magic uint32
		frac  uint32
		want  time.Time
	}{
		{"little-endian/µs", binary.LittleEndian, pcap.MagicMicroseconds, 123456, time.Unix(1700000000, 123456000)},
		{"big-endian/µs", binary.BigEndian, pcap.MagicMicroseconds, 123456, time.Unix(1700000000, 123456000)},
		{"little-endian/ns", binary.LittleEndian, pcap.MagicNanoseconds, 123456789, time.Unix(1700000000, 123456789)},
		{"big-endian/ns", binary.BigEndian, pcap.MagicNanoseconds, 123456789, time.Unix(1700000000, 123456789)},
	} {
		r, err := pcap.NewReader(bytes.NewReader(handmade(tc.order, tc.magic, tc.frac, frame)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ts, got, err := r.Next()
		if err != nil || !ts.Equal(tc.want) || !bytes.Equal(got, frame) || r.OrigLen() != len(frame)+4 {
			t.Errorf("%s: Next = %v, %d bytes (orig %d), %v", tc.name, ts, len(got), r.OrigLen(), err)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	for _, f := range formats {
		good := writeFile(t, f, 0, testFrames()[:2])
		for _, tc := range []struct {
			name   string
			data   []byte
			header bool // the error comes from NewReader, not Next
			is     error
			want   string
		}{
			{"empty", nil, true, pcap.ErrTruncated, "truncated capture file: empty input, no file header"},
			{"3 bytes", good[:3], true, pcap.ErrTruncated, "truncated capture file: the input ends after 3 bytes, inside the file header"},
			{"short header", good[:20], true, pcap.ErrTruncated, "truncated capture file: the " + f.String() + " file header is incomplete"},
			{"bad magic", []byte("GET / HTTP/1.1\r\nHost: example\r\n"), true, pcap.ErrMagic, "not a pcap or pcapng file: the file starts with 47 45 54 20; want a classic pcap magic (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order) or a pcapng Section Header Block (0a 0d 0d 0a)"},
			{"record", good[:len(good)-1], false, pcap.ErrTruncated, "truncated capture file: record 2 is incomplete"},
		} {
			r, err := pcap.NewReader(bytes.NewReader(tc.data))
			if !tc.header {
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err = r.Next(); err != nil {
					t.Fatalf("%v %s: record 1: %v", f, tc.name, err)
				}
				_, _, err = r.Next()
			}
			if !errors.Is(err, tc.is) || err.Error() != tc.want {
				t.Errorf("%v %s: error = %v\nwant    %s (wrapping %v)", f, tc.name, err, tc.want, tc.is)
			}
		}
	}
}

type failWriter struct {
	n   int // writes that succeed
	err error
}

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	f.n--
	return len(b), nil
}

func TestWriterErrors(t *testing.T) {
	for _, snaplen := range []int{-1, 262145} {
		_, err := pcap.NewWriter(io.Discard, snaplen)
		if want := fmt.Sprintf("snaplen %d: use 1 through 262144 bytes, or 0 for 262144", snaplen); err == nil || err.Error() != want {
			t.Errorf("NewWriter(snaplen %d) = %v, want %s", snaplen, err, want)
		}
	}
	disk := errors.New("disk full")
	for _, f := range formats {
		if _, err := pcap.NewWriterFormat(&failWriter{err: disk}, f, 0); !errors.Is(err, disk) || err.Error() != "cannot write the "+f.String()+" file header: disk full" {
			t.Errorf("NewWriter on a failing writer = %v", err)
		}
		fw := &failWriter{n: 2, err: disk}
		w, err := pcap.NewWriterFormat(fw, f, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Each record is one Write.
		if err := w.WritePacket(base, []byte{1}); err != nil || w.Err() != nil {
			t.Fatalf("%v: first WritePacket = %v, Err %v", f, err, w.Err())
		}
		err = w.WritePacket(base, []byte{2})
		if !errors.Is(err, disk) || err.Error() != "cannot write a record: disk full" || w.Err() != err {
			t.Fatalf("%v: failing WritePacket = %v, Err %v", f, err, w.Err())
		}
		fw.n = 10 // the writer works again, but the file is already broken
		if err2 := w.WritePacket(base, []byte{3}); err2 != err {
			t.Errorf("%v: WritePacket after an error = %v, want the first error", f, err2)
		}
	}
	w, _ := pcap.NewWriterFormat(io.Discard, pcap.Classic, 0)
	before := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	if err := w.WritePacket(before, []byte{1}); err == nil || !strings.Contains(err.Error(), "classic pcap holds 1970-01-01 through 2106-02-07 UTC") {
		t.Errorf("WritePacket(1969) = %v", err)
	}
	if f, err := pcap.ParseFormat("PCAP"); err != nil || f != pcap.Classic {
		t.Errorf("ParseFormat(PCAP) = %v, %v", f, err)
	}
	if f, err := pcap.ParseFormat("pcapng"); err != nil || f != pcap.PcapNG {
		t.Errorf("ParseFormat(pcapng) = %v, %v", f, err)
	}
	if _, err := pcap.ParseFormat("erf"); err == nil {
		t.Error("ParseFormat(erf) accepted")
	}
}

func TestConcurrentWritePacket(t *testing.T) {
	for _, f := range formats {
		var buf bytes.Buffer
		w, err := pcap.NewWriterFormat(&buf, f, 0)
		if err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 100
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := range each {
					fr := bytes.Repeat([]byte{byte(g)}, 60+g*100+i)
					if err := w.WritePacket(base, fr); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		r, err := pcap.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		next := make([]int, writers)
		for range writers * each {
			_, fr, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			g := int(fr[0])
			if len(fr) != 60+g*100+next[g] || !bytes.Equal(fr, bytes.Repeat([]byte{byte(g)}, len(fr))) {
				t.Fatalf("%v: writer %d record %d: %d bytes, mixed or out of order", f, g, next[g], len(fr))
			}
			next[g]++
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Errorf("at end: %v", err)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	frame := testFrames()[7]
	for _, f := range formats {
		w, err := pcap.NewWriterFormat(io.Discard, f, 0)
		if err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(1000, func() { w.WritePacket(base, frame) }); allocs != 0 {
			t.Errorf("%v WritePacket: %v allocations, want 0", f, allocs)
		}
	}
	var fr pcap.Frame
	tagged := append(append(append([]byte{}, frame[:12]...), 0x81, 0, 0, 100), frame[12:]...)
	pcap.Ethernet(pcap.LinkTypeEthernet, tagged, &fr)
	if allocs := testing.AllocsPerRun(1000, func() { pcap.Ethernet(pcap.LinkTypeEthernet, tagged, &fr) }); allocs != 0 {
		t.Errorf("Ethernet: %v allocations, want 0", allocs)
	}
}

// TestEthernet checks the link-layer decoding on hand-built records of each
// link type.
func TestEthernet(t *testing.T) {
	dst := []byte{0x02, 0x0e, 0x0c, 0, 0, 2}
	src := []byte{0x02, 0x0e, 0x0c, 0, 0, 1}
	payload := []byte{0x0e, 0x10, 1, 2, 3, 4}
	plain := append(append(append([]byte{}, dst...), src...), append([]byte{0x88, 0xb5}, payload...)...)
	cooked := append(make([]byte, 6), plain[6:]...)
	be := binary.BigEndian
	sll := func(pkttype uint16, proto uint16, rest []byte) []byte {
		h := make([]byte, 16)
		be.PutUint16(h[0:], pkttype)
		be.PutUint16(h[2:], 1) // ARPHRD_ETHER
		be.PutUint16(h[4:], 6)
		copy(h[6:], src)
		be.PutUint16(h[14:], proto)
		return append(h, rest...)
	}
	sll2 := func(pkttype uint8, proto uint16, rest []byte) []byte {
		h := make([]byte, 20)
		be.PutUint16(h[0:], proto)
		be.PutUint32(h[4:], 3) // ifindex
		be.PutUint16(h[8:], 1)
		h[10], h[11] = pkttype, 6
		copy(h[12:], src)
		return append(h, rest...)
	}
	tag100 := []byte{0xa0, 0x64, 0x88, 0xb5} // PCP 5, VID 100, then 0x88B5
	for _, tc := range []struct {
		name  string
		lt    pcap.LinkType
		data  []byte
		want  []byte
		known bool
		ptype string
		dir   pcap.Direction
		vlans []pcap.VLAN
	}{
		{"en10mb", pcap.LinkTypeEthernet, plain, plain, true, "", pcap.DirUnknown, nil},
		{"en10mb qinq", pcap.LinkTypeEthernet, append(append(append([]byte{}, plain[:12]...), 0x88, 0xa8, 0x10, 0xc8, 0x81, 0x00, 0x01, 0x2c), plain[12:]...), plain, true, "", pcap.DirUnknown,
			[]pcap.VLAN{{TPID: 0x88a8, ID: 200, DropEligible: true}, {TPID: 0x8100, ID: 300}}},
		{"sll host", pcap.LinkTypeLinuxSLL, sll(0, 0x88b5, payload), cooked, false, "host", pcap.DirIn, nil},
		{"sll outgoing vlan", pcap.LinkTypeLinuxSLL, sll(4, 0x8100, append(append([]byte{}, tag100...), payload...)), cooked, false, "outgoing", pcap.DirOut,
			[]pcap.VLAN{{TPID: 0x8100, ID: 100, Priority: 5}}},
		{"sll2 multicast", pcap.LinkTypeLinuxSLL2, sll2(2, 0x88b5, payload), cooked, false, "multicast", pcap.DirIn, nil},
		{"sll2 outgoing vlan", pcap.LinkTypeLinuxSLL2, sll2(4, 0x8100, append(append([]byte{}, tag100...), payload...)), cooked, false, "outgoing", pcap.DirOut,
			[]pcap.VLAN{{TPID: 0x8100, ID: 100, Priority: 5}}},
	} {
		var f pcap.Frame
		if err := pcap.Ethernet(tc.lt, tc.data, &f); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(f.Bytes, tc.want) || f.DstKnown != tc.known || f.PacketType != tc.ptype || f.Direction != tc.dir || fmt.Sprint(f.VLANs) != fmt.Sprint(tc.vlans) {
			t.Errorf("%s: % x known %v type %q dir %v vlans %v\nwant % x known %v type %q dir %v vlans %v", tc.name,
				f.Bytes, f.DstKnown, f.PacketType, f.Direction, f.VLANs, tc.want, tc.known, tc.ptype, tc.dir, tc.vlans)
		}
	}
	for _, tc := range []struct {
		name string
		lt   pcap.LinkType
		data []byte
		is   error
	}{
		{"802.11", 105, plain, pcap.ErrLinkType},
		{"runt", pcap.LinkTypeEthernet, plain[:13], pcap.ErrFrame},
		{"short sll", pcap.LinkTypeLinuxSLL, make([]byte, 15), pcap.ErrFrame},
		{"short sll2", pcap.LinkTypeLinuxSLL2, make([]byte, 19), pcap.ErrFrame},
		{"cut tag", pcap.LinkTypeEthernet, append(append([]byte{}, plain[:12]...), 0x81, 0x00, 0x00), pcap.ErrFrame},
	} {
		var f pcap.Frame
		if err := pcap.Ethernet(tc.lt, tc.data, &f); !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		}
	}
	_ = layers.LinkTypeEthernet
}
