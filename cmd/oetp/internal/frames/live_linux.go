//go:build linux

package frames

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// liveRecorder writes the live view's frames to a pcapng file with
// link/pcap's writer (one flushed record per frame, so the file is whole
// whenever the command stops).
type liveRecorder struct {
	f   *os.File
	w   *pcap.Writer
	buf []byte // a frame with its VLAN tag put back
	n   int
}

// newLiveRecorder creates path; it refuses a symbolic link, so that the
// file written is the one named.
func newLiveRecorder(path string) (*liveRecorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, cli.Usagef("--write %s", cli.FileWords(err))
	}
	w, err := pcap.NewWriterFormat(f, pcap.PcapNG, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--write %s: %w", path, err)
	}
	return &liveRecorder{f: f, w: w, buf: make([]byte, 0, pcap.MaxSnaplen+4)}, nil
}

// write records data as it crossed the wire: with the 802.1Q tag of VLAN
// vid (>= 0) that the kernel took out put back after the MAC addresses.
func (r *liveRecorder) write(ts time.Time, data []byte, vid int) error {
	frame := data
	if vid >= 0 && len(data) >= 12 {
		r.buf = append(append(append(r.buf[:0], data[:12]...), 0x81, 0x00, byte(vid>>8)&0x0F, byte(vid)), data[12:]...)
		frame = r.buf
	}
	if err := r.w.WritePacket(ts, frame); err != nil {
		return err
	}
	r.n++
	return nil
}

func (r *liveRecorder) close() error {
	err := r.w.Err()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ShowLive shows the oETP frames crossing o.Iface on out until o.Count
// frames, ctx ends, or SIGINT/SIGTERM; notes go to errw.
func ShowLive(ctx context.Context, o LiveOptions, out, errw io.Writer) error {
	h, err := node.OpenTap(node.TapConfig{Iface: o.Iface, Promisc: o.Promisc})
	if err != nil {
		return cli.Err(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	closed := make(chan struct{})
	go func() {
		<-ctx.Done()
		h.Close()
		close(closed)
	}()
	defer func() { stop(); <-closed }()

	var rec *liveRecorder
	if o.Write != "" {
		if rec, err = newLiveRecorder(o.Write); err != nil {
			return err
		}
		defer func() {
			if cerr := rec.close(); cerr != nil {
				fmt.Fprintf(errw, "oetp: --write %s: %v\n", o.Write, cerr)
			}
		}()
	}
	d := NewDumper(out, o.MaxFrame, o.JSON)
	d.Live = true
	shown := 0
	for o.Count == 0 || shown < o.Count {
		data, ci, err := h.Read()
		if err != nil {
			if ctx.Err() != nil {
				break // SIGINT, SIGTERM
			}
			return fmt.Errorf("--iface %s: after %d frame(s): %w", o.Iface, shown, err)
		}
		if pcap.Ethernet(pcap.LinkTypeEthernet, data, &d.Frame) != nil {
			continue
		}
		if fr := d.Frame.Bytes; binary.BigEndian.Uint16(fr[12:]) != wire.EtherType {
			continue
		}
		if ci.VLAN >= 0 {
			// A tag the kernel (or the NIC) took out of the frame.
			d.Frame.VLANs = append([]pcap.VLAN{{TPID: 0x8100, ID: uint16(ci.VLAN)}}, d.Frame.VLANs...)
		}
		if rec != nil {
			if err := rec.write(ci.Time, data, ci.VLAN); err != nil {
				return fmt.Errorf("--write %s: after %d frame(s): %w", o.Write, shown, err)
			}
		}
		if err := d.Record(ci.Time, len(data), ci.Length, nil); err != nil {
			return err
		}
		shown++
	}
	if rec != nil {
		fmt.Fprintf(errw, "oetp: wrote %d frame(s) to %s\n", rec.n, o.Write)
	}
	if drops, err := h.Drops(); err == nil && drops > 0 {
		fmt.Fprintf(errw, "oetp: the kernel dropped %d frame(s) the live view could not read in time\n", drops)
	}
	d.Summary(errw)
	return nil
}
