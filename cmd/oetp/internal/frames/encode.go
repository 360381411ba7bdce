package frames

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/wire"
)

// ParseCause parses an ERROR_RSP wire cause: any 32-bit number (1..7 are
// assigned; others make invalid-cause stimulus) or the mnemonic of a local
// CSR code 1..7, e.g. LOCAL_AXI_WR_SLVERR (6).
func ParseCause(s string) (uint32, error) {
	if v, err := num.Uint32(s); err == nil {
		return v, nil
	}
	if code, err := wire.ParseCode(s); err == nil && code.Cause() != 0 {
		return code.Cause(), nil
	}
	return 0, fmt.Errorf("%q is not a wire cause: use a number (1..7 are assigned, e.g. 6) or a local mnemonic such as LOCAL_AXI_WR_SLVERR", s)
}

// encodeFlags lists, per command, the parameter flags it requires and those
// it accepts. "payload" stands for --payload or --payload-file.
var encodeFlags = map[wire.Cmd]struct{ need, may []string }{
	wire.RMEMReadReq:  {need: []string{"addr"}},
	wire.RMEMReadRsp:  {need: []string{"data"}},
	wire.RMEMWriteReq: {need: []string{"addr", "data"}, may: []string{"mask"}},
	wire.RMEMWriteRsp: {},
	wire.DMAReadReq:   {need: []string{"addr", "length"}},
	wire.DMAReadRsp:   {need: []string{"payload"}, may: []string{"length"}},
	wire.DMAWriteReq:  {need: []string{"addr", "payload"}, may: []string{"length"}},
	wire.DMAWriteRsp:  {},
	wire.ErrorRsp:     {need: []string{"cause"}},
}

// paramFlags are the command-specific flags, with what each one means.
var paramFlags = []struct{ name, what string }{
	{"addr", "--addr A (the 32-bit byte address)"},
	{"length", "--length N (the byte count)"},
	{"mask", "--mask M (the 32-bit BitEnable)"},
	{"data", "--data D (the 32-bit data word)"},
	{"payload", "--payload HEX or --payload-file F (the data bytes)"},
	{"cause", "--cause C (the wire Error Code, 1..7)"},
}

// Params are the fields of the frame Encode builds, as oetp encode's flags
// give them; Set says which flags were given.
type Params struct {
	Dst, Src                             wire.MAC
	RID, Addr, Length, Mask, Data, Cause uint32
	Payload                              []byte
	PayloadFile                          string
	Pad                                  bool
	Set                                  func(flag string) bool
}

// Encode checks the flags given for the command named by arg and builds
// the frame. Its errors are usage errors: nothing fits the command.
func Encode(arg string, o Params) ([]byte, error) {
	c, err := wire.ParseCmd(arg)
	if err != nil {
		return nil, cli.Usagef("CMD: %v", err)
	}
	set := o.Set
	for _, f := range []struct{ name, what string }{
		{"dst", "--dst MAC (the destination, e.g. 02:0e:0c:00:00:0b)"},
		{"src", "--src MAC (this endpoint's unicast MAC, e.g. 02:0e:0c:00:00:0a)"},
		{"rid", "--rid N (the Request ID)"},
	} {
		if !set(f.name) {
			return nil, cli.Usagef("%v needs %s", c, f.what)
		}
	}
	if o.Src.IsGroup() {
		return nil, cli.Usagef("--src %v is a group address: a source MAC must be unicast (bit 0 of the first octet clear)", o.Src)
	}
	if set("payload") && set("payload-file") {
		return nil, cli.Usagef("--payload and --payload-file are alternatives: give one")
	}
	hasPayload := set("payload") || set("payload-file")
	allowed := encodeFlags[c]
	has := func(name string) bool {
		if name == "payload" {
			return hasPayload
		}
		return set(name)
	}
	accepts := func(name string) bool {
		return slices.Contains(allowed.need, name) || slices.Contains(allowed.may, name)
	}
	for _, p := range paramFlags {
		if has(p.name) && !accepts(p.name) {
			flag := "--" + p.name
			if p.name == "payload" {
				flag = "--payload/--payload-file"
			}
			return nil, cli.Usagef("%s does not apply to %v (%s)", flag, c, describeParams(c))
		}
	}
	for _, p := range paramFlags {
		if slices.Contains(allowed.need, p.name) && !has(p.name) {
			return nil, cli.Usagef("%v needs %s", c, p.what)
		}
	}

	payload := o.Payload
	if set("payload-file") {
		payload, err = os.ReadFile(o.PayloadFile)
		if err != nil {
			return nil, cli.Usagef("--payload-file %s", cli.FileWords(err))
		}
	}
	if hasPayload {
		if len(payload) == 0 || len(payload) > wire.MaxFragment {
			return nil, cli.Usagef("the payload holds %d bytes: a DMA fragment carries 1..%d bytes", len(payload), wire.MaxFragment)
		}
		if set("length") && uint64(o.Length) != uint64(len(payload)) {
			return nil, cli.Usagef("--length %d does not match the %d-byte payload: omit --length or make them agree", o.Length, len(payload))
		}
	}

	b := make([]byte, 0, wire.MaxFrameLen)
	dst, src, rid := o.Dst, o.Src, o.RID
	switch c {
	case wire.RMEMReadReq:
		b = wire.AppendRMEMReadReq(b, dst, src, rid, o.Addr)
	case wire.RMEMReadRsp:
		b = wire.AppendRMEMReadRsp(b, dst, src, rid, o.Data)
	case wire.RMEMWriteReq:
		b = wire.AppendRMEMWriteReq(b, dst, src, rid, o.Addr, o.Mask, o.Data)
	case wire.RMEMWriteRsp:
		b = wire.AppendRMEMWriteRsp(b, dst, src, rid)
	case wire.DMAReadReq:
		b = wire.AppendDMAReadReq(b, dst, src, rid, o.Addr, o.Length)
	case wire.DMAReadRsp:
		b = wire.AppendDMAReadRsp(b, dst, src, rid, payload)
	case wire.DMAWriteReq:
		b = wire.AppendDMAWriteReq(b, dst, src, rid, o.Addr, payload)
	case wire.DMAWriteRsp:
		b = wire.AppendDMAWriteRsp(b, dst, src, rid)
	case wire.ErrorRsp:
		b = wire.AppendErrorRsp(b, dst, src, rid, o.Cause)
	}
	if o.Pad {
		for len(b) < wire.MinFrameLen {
			b = append(b, 0)
		}
	}
	return b, nil
}

// describeParams says which parameter flags c takes.
func describeParams(c wire.Cmd) string {
	a := encodeFlags[c]
	if len(a.need)+len(a.may) == 0 {
		return "it takes only --dst, --src and --rid"
	}
	var parts []string
	for _, n := range a.need {
		parts = append(parts, "--"+n)
	}
	for _, n := range a.may {
		parts = append(parts, "[--"+n+"]")
	}
	return "it takes " + strings.Join(parts, " ")
}
