package frames

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// ParseHex decodes bytes written in hex. White space and colons separate
// groups, each group may carry a 0x prefix and must hold whole bytes (an
// even number of digits): "020e0c00000b", "02:0e:0c:00:00:0b",
// "0x020e 0x0c00", "88 B5 0E 10" are all accepted.
func ParseHex(s string) ([]byte, error) {
	groups := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ':' })
	var out []byte
	for _, g := range groups {
		digits := g
		if len(digits) >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
			digits = digits[2:]
		}
		for _, r := range digits {
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return nil, fmt.Errorf("hex group %q contains %q, which is not a hex digit", g, r)
			}
		}
		if len(digits)%2 != 0 {
			return nil, fmt.Errorf("hex group %q has an odd number of digits: write whole bytes, e.g. 0e rather than e", g)
		}
		b, err := hex.DecodeString(digits)
		if err != nil {
			return nil, fmt.Errorf("hex group %q: %v", g, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// DecodeLines describes one frame per line of in, in JSON on w (which it
// flushes), skipping blank lines and lines starting with '#'. A line that
// is not hex is reported on stderr and the others are still decoded; the
// error then counts them.
func DecodeLines(in io.Reader, w *bufio.Writer, stderr io.Writer, opt Options) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var line, bad int
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b, err := ParseHex(t)
		if err != nil {
			bad++
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "oetp: stdin line %d: %v\n", line, err)
			continue
		}
		if err := enc.Encode(Describe(b, opt)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin after line %d: %w", line, err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d line(s) of stdin were not hex frames", bad)
	}
	return nil
}
