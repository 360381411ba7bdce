package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/wire"
)

// fakeHub answers HELLO and OPEN (a device whose bound is 100ms) like a
// hub, and hands every other request to onOp with the connection.
func fakeHub(t *testing.T, onOp func(nc net.Conn, hdr proto.Header)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hub.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				for {
					hdr, _, _, err := proto.ReadMessage(nc, nil)
					if err != nil {
						return
					}
					var out []byte
					switch hdr.Type {
					case proto.Hello:
						out = proto.AppendReplyHeader(nil, hdr, 0, 0, "")
						out = binary.LittleEndian.AppendUint16(out, proto.Version)
						out = binary.LittleEndian.AppendUint32(out, proto.MaxMessage)
						out = binary.LittleEndian.AppendUint16(out, 1)
						out = binary.LittleEndian.AppendUint64(out, 0)
					case proto.Open:
						out = proto.AppendReplyHeader(nil, hdr, 0, 0, "")
						out = append(out, 1, 0, 0, 0)
						out = append(out, make([]byte, 24)...)
						out = proto.AppendStr16(out, "board1")
						out = proto.AppendStr16(out, "eth0")
						out = binary.LittleEndian.AppendUint32(out, 100)
						out = binary.LittleEndian.AppendUint32(out, 1024)
					default:
						onOp(nc, hdr)
						return
					}
					nc.Write(proto.Finish(out, 0))
				}
			}()
		}
	}()
	return path
}

func openFake(t *testing.T, path string, o client.Options) *client.Device {
	t.Helper()
	o.Path = path
	c, err := client.DialOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	d, err := c.Device("board1")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantHubOp(t *testing.T, err error, code wire.Code, unknown bool, cause error) {
	t.Helper()
	var oe *client.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T), want an OpError", err, err)
	}
	if oe.Code != code || oe.OutcomeUnknown != unknown || !errors.Is(err, client.ErrHub) || (cause != nil && !errors.Is(err, cause)) {
		t.Errorf("%v: code %v outcome unknown %v, want %v %v, wrapping ErrHub and %v", err, oe.Code, oe.OutcomeUnknown, code, unknown, cause)
	}
}

// A hub that dies after reading a request leaves its outcome unknown.
func TestHubGoneMidOperation(t *testing.T) {
	path := fakeHub(t, func(nc net.Conn, hdr proto.Header) {})
	d := openFake(t, path, client.Options{})
	err := d.Write(0x10, 1, 0xFFFFFFFF)
	wantHubOp(t, err, wire.CodeLocalAXIS, true, nil)
	// The connection is gone: the next request never reaches a hub.
	_, err = d.Read(0x10)
	wantHubOp(t, err, wire.CodeLocalAXIS, false, nil)
}

// A hub that notices the client (the connection cap, the idle timeout)
// says so with a tag-0 reply: the request did not run.
func TestHubNotice(t *testing.T) {
	path := fakeHub(t, func(nc net.Conn, hdr proto.Header) {
		nc.Write(proto.Finish(proto.AppendReplyHeader(nil, proto.Header{Type: proto.Hello}, proto.StatusIdle, 0, "idle"), 0))
	})
	d := openFake(t, path, client.Options{})
	_, err := d.Read(0x10)
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusIdle {
		t.Fatalf("read after the notice: %v", err)
	}
}

// A frozen hub (it reads the request and never answers) fails the
// operation within its deadline, derived from the device's bound, with
// the outcome unknown.
func TestFrozenHubDeadline(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	path := fakeHub(t, func(nc net.Conn, hdr proto.Header) {
		<-hold
	})
	d := openFake(t, path, client.Options{})
	dl := d.Deadline(0)
	if want := client.DeadlineMargin + 100*time.Millisecond; dl != want {
		t.Errorf("Deadline(0) = %v, want %v", dl, want)
	}
	if got, want := d.Deadline(4096), client.DeadlineMargin+5*100*time.Millisecond; got != want {
		t.Errorf("Deadline(4096) = %v, want %v", got, want)
	}
	t0 := time.Now()
	_, err := d.Read(0x10)
	took := time.Since(t0)
	wantHubOp(t, err, wire.CodeTimeout, true, endpoint.ErrTimeout)
	if took < dl-50*time.Millisecond || took > dl+time.Second {
		t.Errorf("failed after %v, deadline %v", took, dl)
	}
	// Options.OpTimeout sets it.
	d = openFake(t, path, client.Options{OpTimeout: 200 * time.Millisecond})
	t0 = time.Now()
	_, err = d.WriteBlockTransfer(0x100000, make([]byte, 4096))
	wantHubOp(t, err, wire.CodeTimeout, true, endpoint.ErrTimeout)
	if took := time.Since(t0); took > time.Second {
		t.Errorf("failed after %v, deadline 200ms", took)
	}
}

// A cancelled context ends an operation at once, outcome unknown.
func TestContextCancel(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	reached := make(chan struct{}, 1)
	path := fakeHub(t, func(nc net.Conn, hdr proto.Header) {
		reached <- struct{}{}
		<-hold
	})
	d := openFake(t, path, client.Options{OpTimeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-reached; cancel() }()
	done := make(chan error, 1)
	go func() { done <- d.WithContext(ctx).Write(0x10, 1, 0xFFFFFFFF) }()
	select {
	case err := <-done:
		wantHubOp(t, err, wire.CodeTimeout, true, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled operation did not return")
	}
}
