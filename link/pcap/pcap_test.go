package pcap_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

func writeFile(t testing.TB, snaplen int, frames [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(stamp(i), f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestWriterBytes(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 65535)
	if err != nil {
		t.Fatal(err)
	}
	if w.Snaplen() != 65535 {
		t.Errorf("Snaplen() = %d", w.Snaplen())
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
	var d bytes.Buffer
	if w, err := pcap.NewWriter(&d, 0); err != nil || w.Snaplen() != pcap.MaxSnaplen || binary.LittleEndian.Uint32(d.Bytes()[16:]) != 262144 {
		t.Errorf("NewWriter(snaplen 0): Snaplen %d, header % x, %v; want 262144", w.Snaplen(), d.Bytes(), err)
	}
}

func TestRoundTrip(t *testing.T) {
	frames := testFrames()
	data := writeFile(t, 0, frames)

	r, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r.Snaplen() != pcap.MaxSnaplen || r.Nanoseconds() {
		t.Errorf("Snaplen %d Nanoseconds %v, want 262144 false", r.Snaplen(), r.Nanoseconds())
	}
	for i, want := range frames {
		ts, got, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
		if !bytes.Equal(got, want) || r.OrigLen() != len(want) {
			t.Errorf("record %d: %d bytes (orig %d), want %d exact bytes", i+1, len(got), r.OrigLen(), len(want))
		}
		if wantTS := stamp(i).Truncate(time.Microsecond); !ts.Equal(wantTS) {
			t.Errorf("record %d: ts %v, want %v", i+1, ts, wantTS)
		}
	}
	for range 2 {
		if _, f, err := r.Next(); err != io.EOF || f != nil {
			t.Fatalf("Next at end = %v, %v; want nil, io.EOF", f, err)
		}
	}

	// gopacket's reader is an independent check of the same bytes.
	g, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if g.LinkType() != layers.LinkTypeEthernet || g.Snaplen() != pcap.MaxSnaplen || g.Resolution() != gopacket.TimestampResolutionMicrosecond {
		t.Errorf("gopacket: link type %v, snaplen %d, resolution %v", g.LinkType(), g.Snaplen(), g.Resolution())
	}
	for i, want := range frames {
		got, ci, err := g.ReadPacketData()
		if err != nil {
			t.Fatalf("gopacket record %d: %v", i+1, err)
		}
		if !bytes.Equal(got, want) || ci.CaptureLength != len(want) || ci.Length != len(want) {
			t.Errorf("gopacket record %d: %d bytes, caplen %d, len %d; want %d exact bytes", i+1, len(got), ci.CaptureLength, ci.Length, len(want))
		}
		if wantTS := stamp(i).Truncate(time.Microsecond); !ci.Timestamp.Equal(wantTS) {
			t.Errorf("gopacket record %d: ts %v, want %v", i+1, ci.Timestamp, wantTS)
		}
	}
	if _, _, err := g.ReadPacketData(); err != io.EOF {
		t.Errorf("gopacket at end: %v, want io.EOF", err)
	}
}

func TestSnaplen(t *testing.T) {
	frames := testFrames()
	data := writeFile(t, 100, frames)
	r, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	g, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		want := f[:min(len(f), 100)]
		_, got, err := r.Next()
		if err != nil || !bytes.Equal(got, want) || r.OrigLen() != len(f) {
			t.Errorf("record %d: %d bytes, orig %d, %v; want %d bytes of %d", i+1, len(got), r.OrigLen(), err, len(want), len(f))
		}
		gd, ci, err := g.ReadPacketData()
		if err != nil || !bytes.Equal(gd, want) || ci.CaptureLength != len(want) || ci.Length != len(f) {
			t.Errorf("gopacket record %d: caplen %d len %d, %v; want %d of %d", i+1, ci.CaptureLength, ci.Length, err, len(want), len(f))
		}
	}
}

// handmade builds a one-record pcap file in the given byte order and
// resolution, with timestamp 1700000000 s plus frac units.
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

func TestReaderVariants(t *testing.T) {
	frame := testFrames()[2]
	for _, tc := range []struct {
		name  string
		order binary.ByteOrder
		magic uint32
		frac  uint32
		nano  bool
		want  time.Time
	}{
		{"little-endian/µs", binary.LittleEndian, pcap.MagicMicroseconds, 123456, false, time.Unix(1700000000, 123456000)},
		{"big-endian/µs", binary.BigEndian, pcap.MagicMicroseconds, 123456, false, time.Unix(1700000000, 123456000)},
		{"little-endian/ns", binary.LittleEndian, pcap.MagicNanoseconds, 123456789, true, time.Unix(1700000000, 123456789)},
		{"big-endian/ns", binary.BigEndian, pcap.MagicNanoseconds, 123456789, true, time.Unix(1700000000, 123456789)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := handmade(tc.order, tc.magic, tc.frac, frame)
			r, err := pcap.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if r.Nanoseconds() != tc.nano || r.Snaplen() != 65535 {
				t.Errorf("Nanoseconds %v Snaplen %d", r.Nanoseconds(), r.Snaplen())
			}
			ts, got, err := r.Next()
			if err != nil || !ts.Equal(tc.want) || !bytes.Equal(got, frame) || r.OrigLen() != len(frame)+4 {
				t.Errorf("Next = %v, %d bytes (orig %d), %v; want %v, %d bytes (orig %d)", ts, len(got), r.OrigLen(), err, tc.want, len(frame), len(frame)+4)
			}
			// gopacket agrees on the same bytes.
			g, err := pcapgo.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			_, ci, err := g.ReadPacketData()
			if err != nil || !ci.Timestamp.Equal(tc.want) {
				t.Errorf("gopacket: %v, %v; want %v", ci.Timestamp, err, tc.want)
			}
			if _, _, err := r.Next(); err != io.EOF {
				t.Errorf("second Next = %v, want io.EOF", err)
			}
		})
	}
}

// TestReadGopacketFiles reads files that gopacket wrote.
func TestReadGopacketFiles(t *testing.T) {
	frames := testFrames()
	for _, nanos := range []bool{false, true} {
		var buf bytes.Buffer
		g := pcapgo.NewWriter(&buf)
		unit := time.Microsecond
		if nanos {
			g, unit = pcapgo.NewWriterNanos(&buf), time.Nanosecond
		}
		if err := g.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		for i, f := range frames {
			ci := gopacket.CaptureInfo{Timestamp: stamp(i), CaptureLength: len(f), Length: len(f)}
			if err := g.WritePacket(ci, f); err != nil {
				t.Fatal(err)
			}
		}
		r, err := pcap.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if r.Nanoseconds() != nanos {
			t.Errorf("nanos %v: Nanoseconds() = %v", nanos, r.Nanoseconds())
		}
		for i, f := range frames {
			ts, got, err := r.Next()
			if err != nil || !bytes.Equal(got, f) || !ts.Equal(stamp(i).Truncate(unit)) {
				t.Errorf("nanos %v record %d: %v, %d bytes, %v", nanos, i+1, ts, len(got), err)
			}
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Errorf("nanos %v: at end %v", nanos, err)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	good := writeFile(t, 0, testFrames()[:2])
	le := binary.LittleEndian
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		le.PutUint32(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		header bool // the error comes from NewReader, not Next
		is     error
		want   string
	}{
		{"empty", nil, true, pcap.ErrTruncated, "pcap: truncated file: empty input, no file header"},
		{"short header", good[:20], true, pcap.ErrTruncated, "pcap: truncated file: file header ends after 20 of 24 bytes"},
		{"bad magic", []byte("GET / HTTP/1.1\r\nHost: example\r\n"), true, pcap.ErrMagic, "pcap: not a classic pcap file: magic number 47 45 54 20, want a1 b2 c3 d4 or a1 b2 3c 4d in either byte order"},
		{"pcapng", patch(0, 0x0a0d0d0a), true, pcap.ErrMagic, "pcap: not a classic pcap file: this is a pcapng file; convert it with `editcap -F pcap IN OUT`"},
		{"version", patch(4, 1), true, pcap.ErrVersion, "pcap: unsupported pcap version: version 1.0, want 2.4"},
		{"link type", patch(20, 105), true, pcap.ErrLinkType, "pcap: unsupported link type: link type 105; only Ethernet (LINKTYPE_ETHERNET, 1) is supported"},
		{"fcs flags", patch(20, 0x14000001), true, pcap.ErrLinkType, "pcap: unsupported link type: link-type field 0x14000001 has flags in its upper 16 bits (such as an FCS length); only plain Ethernet (1) is supported"},
		{"record header", good[:24+16+14+7], false, pcap.ErrTruncated, "pcap: truncated file: record 2 header ends after 7 of 16 bytes"},
		{"record data", good[:len(good)-1], false, pcap.ErrTruncated, "pcap: truncated file: record 2 ends after 16 of 17 captured bytes"},
		{"record length", patch(24+16+14+8, 262145), false, pcap.ErrRecordLength, "pcap: record too long: record 2 claims 262145 captured bytes, more than 262144"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := pcap.NewReader(bytes.NewReader(tc.data))
			if !tc.header {
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err = r.Next(); err != nil {
					t.Fatalf("record 1: %v", err)
				}
				_, _, err = r.Next()
			}
			if !errors.Is(err, tc.is) || err.Error() != tc.want {
				t.Errorf("error = %v\nwant    %s (wrapping %v)", err, tc.want, tc.is)
			}
		})
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
		if want := fmt.Sprintf("pcap: snaplen %d: use 1 through 262144 bytes, or 0 for 262144", snaplen); err == nil || err.Error() != want {
			t.Errorf("NewWriter(snaplen %d) = %v, want %s", snaplen, err, want)
		}
	}
	disk := errors.New("disk full")
	if _, err := pcap.NewWriter(&failWriter{err: disk}, 0); !errors.Is(err, disk) || err.Error() != "pcap: write file header: disk full" {
		t.Errorf("NewWriter on a failing writer = %v", err)
	}
	fw := &failWriter{n: 2, err: disk}
	w, err := pcap.NewWriter(fw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(base, []byte{1}); err != nil || w.Err() != nil {
		t.Fatalf("first WritePacket = %v, Err %v", err, w.Err())
	}
	err = w.WritePacket(base, []byte{2})
	if !errors.Is(err, disk) || err.Error() != "pcap: write record: disk full" || w.Err() != err {
		t.Fatalf("failing WritePacket = %v, Err %v", err, w.Err())
	}
	fw.n = 10 // the writer works again, but the file is already broken
	if err2 := w.WritePacket(base, []byte{3}); err2 != err {
		t.Errorf("WritePacket after an error = %v, want the first error", err2)
	}
	before := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
	if err := w.WritePacket(before, []byte{1}); err == nil || !strings.Contains(err.Error(), "classic pcap holds 1970-01-01 through 2106-02-07 UTC") {
		t.Errorf("WritePacket(1969) = %v", err)
	}
}

func TestConcurrentWritePacket(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				f := bytes.Repeat([]byte{byte(g)}, 60+g*100+i)
				if err := w.WritePacket(base, f); err != nil {
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
		_, f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		g := int(f[0])
		if len(f) != 60+g*100+next[g] || !bytes.Equal(f, bytes.Repeat([]byte{byte(g)}, len(f))) {
			t.Fatalf("writer %d record %d: %d bytes, mixed or out of order", g, next[g], len(f))
		}
		next[g]++
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("at end: %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	w, err := pcap.NewWriter(io.Discard, 0)
	if err != nil {
		t.Fatal(err)
	}
	frame := testFrames()[7]
	if allocs := testing.AllocsPerRun(1000, func() { w.WritePacket(base, frame) }); allocs != 0 {
		t.Errorf("WritePacket: %v allocations, want 0", allocs)
	}
	frames := make([][]byte, 1100)
	for i := range frames {
		frames[i] = testFrames()[i%8]
	}
	r, err := pcap.NewReader(bytes.NewReader(writeFile(t, 0, frames)))
	if err != nil {
		t.Fatal(err)
	}
	for range 8 { // grow the buffer to the largest frame
		r.Next()
	}
	if allocs := testing.AllocsPerRun(1000, func() { r.Next() }); allocs != 0 {
		t.Errorf("Reader.Next: %v allocations, want 0", allocs)
	}
}

// TestTcpdump checks that tcpdump reads our files: every frame's bytes,
// length and timestamp.
func TestTcpdump(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump not installed (apt-get install tcpdump): cannot check that it reads our files")
	}
	frames := testFrames()
	path := filepath.Join(t.TempDir(), "frames.pcap")
	if err := os.WriteFile(path, writeFile(t, 0, frames), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tcpdump, "-r", path, "-nn", "-xx", "-tt")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tcpdump: %v\n%s", err, stderr.Bytes())
	}
	type packet struct {
		header string
		hex    strings.Builder
	}
	var pkts []*packet
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "\t") {
			pkts = append(pkts, &packet{header: line})
			continue
		}
		_, data, ok := strings.Cut(line, ":")
		if !ok || len(pkts) == 0 {
			t.Fatalf("unexpected tcpdump line %q", line)
		}
		pkts[len(pkts)-1].hex.WriteString(strings.ReplaceAll(data, " ", ""))
	}
	if len(pkts) != len(frames) {
		t.Fatalf("tcpdump printed %d packets, want %d:\n%s", len(pkts), len(frames), out)
	}
	for i, p := range pkts {
		got, err := hex.DecodeString(p.hex.String())
		if err != nil {
			t.Fatalf("packet %d hex: %v", i+1, err)
		}
		ts := stamp(i)
		wantTS := fmt.Sprintf("%d.%06d ", ts.Unix(), ts.Nanosecond()/1000)
		if !bytes.Equal(got, frames[i]) || !strings.HasPrefix(p.header, wantTS) || !strings.Contains(p.header, fmt.Sprintf("length %d", len(frames[i]))) {
			t.Errorf("tcpdump packet %d: %q with %d bytes; want timestamp %q, length %d and the exact bytes", i+1, p.header, len(got), wantTS, len(frames[i]))
		}
	}
}

// TestReaderLenientFraction: a fraction of a second beyond its unit's range
// is read as the time it denotes, like libpcap does, rather than refused.
func TestReaderLenientFraction(t *testing.T) {
	frame := testFrames()[0]
	for _, tc := range []struct {
		magic uint32
		frac  uint32
		want  time.Time
	}{
		{pcap.MagicMicroseconds, 1500000, time.Unix(1700000001, 500000000)},
		{pcap.MagicNanoseconds, 2000000001, time.Unix(1700000002, 1)},
	} {
		r, err := pcap.NewReader(bytes.NewReader(handmade(binary.LittleEndian, tc.magic, tc.frac, frame)))
		if err != nil {
			t.Fatal(err)
		}
		if ts, _, err := r.Next(); err != nil || !ts.Equal(tc.want) {
			t.Errorf("magic %#x frac %d: %v, %v; want %v", tc.magic, tc.frac, ts, err, tc.want)
		}
	}
}
