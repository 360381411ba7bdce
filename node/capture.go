package node

import (
	"fmt"
	"os"

	"github.com/openenoc/oetp/link/pcap"
)

// CaptureFormat is the format of a capture file: PcapNG (the default) or
// PcapClassic.
type CaptureFormat = pcap.Format

// The capture formats.
const (
	PcapNG      = pcap.PcapNG
	PcapClassic = pcap.Classic
)

// ParseCaptureFormat parses "pcapng" or "pcap".
func ParseCaptureFormat(s string) (CaptureFormat, error) { return pcap.ParseFormat(s) }

// A Capture is a capture file being written: a node's LinkConfig.Capture,
// or the frames a tool records itself (Writer).
type Capture struct {
	f *os.File
	w *pcap.Writer
}

// CreateCapture creates (or truncates) the capture file at path in format
// f. A file that cannot be created is a *ConfigError of the setting "pcap".
func CreateCapture(path string, f CaptureFormat) (*Capture, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, &ConfigError{Field: "pcap", Msg: fmt.Sprintf(" %s: %v", path, osReason(err)), Err: err}
	}
	w, err := pcap.NewWriterFormat(file, f, 0)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("--pcap %s: %w", path, err)
	}
	return &Capture{f: file, w: w}, nil
}

// Writer is the capture's writer, for a tool that records frames itself.
func (c *Capture) Writer() *pcap.Writer { return c.w }

// Close closes the file and reports the first error of a write or of the
// close. Calling it again returns nil.
func (c *Capture) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.w.Err()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	if err != nil {
		return fmt.Errorf("--pcap: %w", err)
	}
	return nil
}
