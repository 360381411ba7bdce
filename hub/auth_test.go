package hub_test

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
)

// countingListener counts the bytes the hub reads from each connection.
type countingListener struct {
	net.Listener
	conns chan *countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.conns <- cc
	return cc, nil
}

type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// A TCP client without the token gets its refusal from what fits in
// proto.PreAuthMax bytes: a request other than HELLO is refused from its
// header (its 256 MiB body is never read), an oversized HELLO is refused,
// and a wrong token closes the connection; the hub reads at most 4 KiB
// from each while the client keeps sending.
func TestTCPPreAuthBounded(t *testing.T) {
	th := newTestHub(t)
	th.h.SetToken("s3cret")
	tl, err := hub.ListenTCP("127.0.0.1:0", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: tl, conns: make(chan *countingConn, 8)}
	go th.h.Serve(cl, true)

	huge := make([]byte, proto.HeaderLen)
	binary.LittleEndian.PutUint32(huge, proto.MaxMessage) // a 256 MiB BATCH
	huge[4] = proto.Batch
	bigHello := proto.AppendHeader(nil, proto.Hello, 0, 1)
	binary.LittleEndian.PutUint32(bigHello, 8+proto.MaxHello+1)
	wrong := proto.AppendHeader(nil, proto.Hello, 0, 1)
	wrong = binary.LittleEndian.AppendUint16(wrong, proto.Version)
	wrong = proto.Finish(proto.AppendStr16(wrong, "guess"), 0)
	for _, tc := range []struct {
		name   string
		first  []byte
		status uint8
	}{
		{"batch before HELLO", huge, proto.StatusAuth},
		{"oversized HELLO", bigHello, proto.StatusBadMessage},
		{"wrong token", wrong, proto.StatusAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", tl.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			hc := <-cl.conns
			// The header, then 1 MiB more, as fast as the hub takes it.
			go func() {
				nc.Write(tc.first)
				junk := make([]byte, 64<<10)
				for range 16 {
					if _, err := nc.Write(junk); err != nil {
						return
					}
				}
			}()
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, st, _ := readReply(t, nc)
			if st.Status != tc.status {
				t.Errorf("status %s (%s), want %s", proto.StatusName(st.Status), st.Message, proto.StatusName(tc.status))
			}
			if _, err := io.Copy(io.Discard, nc); err != nil && !strings.Contains(err.Error(), "reset") {
				t.Errorf("after the refusal: %v, want the connection closed", err)
			}
			if n := hc.read.Load(); n > proto.PreAuthMax {
				t.Errorf("the hub read %d bytes from an unauthenticated connection, more than %d", n, proto.PreAuthMax)
			}
		})
	}
}

// token_file and --token-file: a file others may read is refused, as are an
// empty one and one longer than a token.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	os.WriteFile(p, []byte(" s3cret\n"), 0o600)
	if tok, err := hub.ReadTokenFile(p); err != nil || tok != "s3cret" {
		t.Errorf("ReadTokenFile = %q, %v", tok, err)
	}
	os.Chmod(p, 0o640)
	if _, err := hub.ReadTokenFile(p); err != nil {
		t.Errorf("group-readable: %v", err)
	}
	os.Chmod(p, 0o644)
	if _, err := hub.ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600 "+p) {
		t.Errorf("world-readable: %v", err)
	}
	os.WriteFile(p, []byte("\n"), 0o600)
	os.Chmod(p, 0o600)
	if _, err := hub.ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty: %v", err)
	}
	os.WriteFile(p, []byte(strings.Repeat("x", proto.MaxToken+1)), 0o600)
	if _, err := hub.ReadTokenFile(p); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too long: %v", err)
	}
}
