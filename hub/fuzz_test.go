package hub_test

import (
	"encoding/binary"
	"testing"

	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
)

// FuzzHandle feeds arbitrary requests to the hub's request handler (on a
// device on an in-memory switch): every framed request gets exactly one
// well-formed reply with its tag, and nothing panics. The hub serves no
// socket: nothing of it is left on disk when the fuzzing engine stops its
// workers.
func FuzzHandle(f *testing.F) {
	h := newHandlerHub(f)
	seed := func(typ uint8, handle uint16, body ...byte) {
		m := proto.AppendHeader(nil, typ, handle, 42)
		f.Add(proto.Finish(append(m, body...), 0))
	}
	seed(proto.Read, 1, 0x10, 0, 0, 0)
	seed(proto.Write, 1, 0x10, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
	seed(proto.ReadBlock, 1, 0, 0, 0x10, 0, 8, 0, 0, 0)
	seed(proto.WriteBlock, 1, 0, 0, 0x10, 0, 1, 2, 3, 4)
	seed(proto.Batch, 1, 2, 0, 0, 0, proto.Read, 0, 0, 0, 0, proto.WriteBlock, 0, 0, 0x10, 0, 4, 0, 0, 0, 1, 2, 3, 4)
	seed(proto.Open, 0, append([]byte{0}, "board1"...)...)
	seed(proto.Open, 0, 1, 2, 0xe, 0xc, 0, 0, 1, 'm', 'e', 'm', '0')
	seed(proto.Hello, 0, 1, 0, 0, 0)
	seed(proto.NodeRead, 1, 'x')
	seed(proto.StatusReq, 0)
	seed(proto.GroupWrite, 0, append(append([]byte{proto.GroupVerify, 4, 0}, "none"...), 0, 0, 0x10, 0, 1, 2, 3, 4)...)
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) >= 4 {
			// Keep the fuzzer off large block operations on the device.
			if n := binary.LittleEndian.Uint32(msg); n > 1<<16 {
				return
			}
		}
		rep, err := hub.HandleMessage(h, msg)
		if err != nil {
			return
		}
		hdr, err := proto.ParseHeader(rep)
		if err != nil || hdr.BodyLen() != len(rep)-proto.HeaderLen {
			t.Fatalf("reply % x: %v", rep, err)
		}
		if hdr.Tag != binary.LittleEndian.Uint32(msg[8:]) || hdr.Type&proto.Reply == 0 {
			t.Fatalf("reply header %+v to % x", hdr, msg[:12])
		}
		if _, _, err := proto.ParseReply(rep[proto.HeaderLen:]); err != nil {
			t.Fatal(err)
		}
	})
}
