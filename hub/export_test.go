package hub

import (
	"bufio"
	"bytes"

	"github.com/openenoc/oetp/hub/proto"
)

// HandleMessage runs one framed request through a connection's handler, as
// the serving goroutine does, and returns the reply.
func HandleMessage(h *Hub, msg []byte) ([]byte, error) {
	c := &conn{h: h, br: bufio.NewReader(bytes.NewReader(nil))}
	hdr, body, _, err := proto.ReadMessage(bytes.NewReader(msg), nil)
	if err != nil {
		return nil, err
	}
	return c.handle(hdr, body, nil), nil
}

// StreamRing is the ring a streamed block passes through.
const StreamRing = streamRing
