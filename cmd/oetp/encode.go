package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/wire"
)

func init() { register("encode", newEncodeCmd) }

// causeValue is a pflag.Value for an ERROR_RSP wire cause: any 32-bit
// number (1..7 are assigned; others make invalid-cause stimulus) or the
// mnemonic of a local CSR code 1..7, e.g. LOCAL_AXI_WR_SLVERR (6).
type causeValue struct{ v uint32 }

func (c *causeValue) String() string { return fmt.Sprint(c.v) }
func (c *causeValue) Type() string   { return "CAUSE" }
func (c *causeValue) Set(s string) error {
	if v, err := num.Uint32(s); err == nil {
		c.v = v
		return nil
	}
	if code, err := wire.ParseCode(s); err == nil && code.Cause() != 0 {
		c.v = code.Cause()
		return nil
	}
	return fmt.Errorf("%q is not a wire cause: use a number (1..7 are assigned, e.g. 6) or a local mnemonic such as LOCAL_AXI_WR_SLVERR", s)
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

type encodeOptions struct {
	dst, src                      macFlag
	rid, addr, length, mask, data u32Flag
	cause                         causeValue
	payload                       hexValue
	payloadFile                   string
	pad                           bool
}

func newEncodeCmd() *cobra.Command {
	o := &encodeOptions{mask: u32Flag{v: 0xFFFFFFFF, hex: true}}
	cmd := &cobra.Command{
		Use:   "encode CMD --dst MAC --src MAC --rid N [flags]",
		Short: "Encode one oETP frame and print it in hex",
		Long: `encode prints the hex (lowercase, no spaces) of one oETP frame: the exact
logical frame the engine emits, from the destination MAC through EndOfData,
without Ethernet padding or FCS unless --pad asks for the 60-byte minimum a
MAC would produce. Numbers are decimal or 0x hex.

CMD is a mnemonic (case-insensitive, '-' or '_') or its code:
  RMEM_READ_REQ  (0x10) --addr
  RMEM_READ_RSP  (0x11) --data
  RMEM_WRITE_REQ (0x20) --addr --data [--mask, default 0xFFFFFFFF]
  RMEM_WRITE_RSP (0x21)
  DMA_READ_REQ   (0x30) --addr --length
  DMA_READ_RSP   (0x31) --payload or --payload-file
  DMA_WRITE_REQ  (0x40) --addr, --payload or --payload-file [--length, must match]
  DMA_WRITE_RSP  (0x41)
  ERROR_RSP      (0xFF) --cause
A DMA payload holds 1..8160 bytes.`,
		Example: `  oetp encode RMEM_READ_REQ --dst 02:0e:0c:00:00:0b --src 02:0e:0c:00:00:0a --rid 0x11223344 --addr 0x1000
  oetp encode dma-write-req --dst 03:0e:0c:00:00:01 --src 02:0e:0c:00:00:0a --rid 7 --addr 0x2000 --payload a0a1a2a3a4 --pad
  oetp encode ERROR_RSP --dst 02:0e:0c:00:00:0a --src 02:0e:0c:00:00:0b --rid 7 --cause LOCAL_AXI_WR_SLVERR`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("encode takes exactly one CMD argument, e.g. RMEM_READ_REQ; got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			frame, err := o.encode(cmd, args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(frame))
			return err
		},
	}
	fl := cmd.Flags()
	fl.Var(&o.dst, "dst", "destination `MAC`, e.g. 02:0e:0c:00:00:0b (03:0e:0c:.. for a group)")
	fl.Var(&o.src, "src", "source `MAC` (unicast), e.g. 02:0e:0c:00:00:0a")
	fl.Var(&o.rid, "rid", "Request ID `N` (32 bits)")
	fl.Var(&o.addr, "addr", "byte address `A` (32 bits)")
	fl.Var(&o.length, "length", "byte count `N`: DMA_READ_REQ Length; for DMA_WRITE_REQ/DMA_READ_RSP it must match the payload")
	fl.Var(&o.mask, "mask", "RMEM_WRITE_REQ BitEnable `M`: bit i enables data bit i")
	fl.Var(&o.data, "data", "RMEM data word `D` (32 bits)")
	fl.Var(&o.payload, "payload", "DMA data bytes in `HEX`")
	fl.StringVar(&o.payloadFile, "payload-file", "", "read the DMA data bytes from file `F` (binary)")
	fl.Var(&o.cause, "cause", "ERROR_RSP wire cause `C`: 1..7 or a mnemonic such as LOCAL_AXI_WR_SLVERR")
	fl.BoolVar(&o.pad, "pad", false, "pad the frame with zeros to 60 bytes, as an Ethernet MAC does")
	return cmd
}

// encode validates the flags for the command named by arg and builds the
// frame.
func (o *encodeOptions) encode(cmd *cobra.Command, arg string) ([]byte, error) {
	c, err := wire.ParseCmd(arg)
	if err != nil {
		return nil, usagef("CMD: %v", err)
	}
	set := cmd.Flags().Changed
	for _, f := range []struct{ name, what string }{
		{"dst", "--dst MAC (the destination, e.g. 02:0e:0c:00:00:0b)"},
		{"src", "--src MAC (this endpoint's unicast MAC, e.g. 02:0e:0c:00:00:0a)"},
		{"rid", "--rid N (the Request ID)"},
	} {
		if !set(f.name) {
			return nil, usagef("%v needs %s", c, f.what)
		}
	}
	if o.src.m.IsGroup() {
		return nil, usagef("--src %v is a group address: a source MAC must be unicast (bit 0 of the first octet clear)", o.src.m)
	}
	if set("payload") && set("payload-file") {
		return nil, usagef("--payload and --payload-file are alternatives: give one")
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
			return nil, usagef("%s does not apply to %v (%s)", flag, c, describeParams(c))
		}
	}
	for _, p := range paramFlags {
		if slices.Contains(allowed.need, p.name) && !has(p.name) {
			return nil, usagef("%v needs %s", c, p.what)
		}
	}

	payload := o.payload.b
	if set("payload-file") {
		payload, err = os.ReadFile(o.payloadFile)
		if err != nil {
			return nil, usagef("--payload-file %s", fileWords(err))
		}
	}
	if hasPayload {
		if len(payload) == 0 || len(payload) > wire.MaxFragment {
			return nil, usagef("the payload holds %d bytes: a DMA fragment carries 1..%d bytes", len(payload), wire.MaxFragment)
		}
		if set("length") && uint64(o.length.v) != uint64(len(payload)) {
			return nil, usagef("--length %d does not match the %d-byte payload: omit --length or make them agree", o.length.v, len(payload))
		}
	}

	b := make([]byte, 0, wire.MaxFrameLen)
	dst, src, rid := o.dst.m, o.src.m, o.rid.v
	switch c {
	case wire.RMEMReadReq:
		b = wire.AppendRMEMReadReq(b, dst, src, rid, o.addr.v)
	case wire.RMEMReadRsp:
		b = wire.AppendRMEMReadRsp(b, dst, src, rid, o.data.v)
	case wire.RMEMWriteReq:
		b = wire.AppendRMEMWriteReq(b, dst, src, rid, o.addr.v, o.mask.v, o.data.v)
	case wire.RMEMWriteRsp:
		b = wire.AppendRMEMWriteRsp(b, dst, src, rid)
	case wire.DMAReadReq:
		b = wire.AppendDMAReadReq(b, dst, src, rid, o.addr.v, o.length.v)
	case wire.DMAReadRsp:
		b = wire.AppendDMAReadRsp(b, dst, src, rid, payload)
	case wire.DMAWriteReq:
		b = wire.AppendDMAWriteReq(b, dst, src, rid, o.addr.v, payload)
	case wire.DMAWriteRsp:
		b = wire.AppendDMAWriteRsp(b, dst, src, rid)
	case wire.ErrorRsp:
		b = wire.AppendErrorRsp(b, dst, src, rid, o.cause.v)
	}
	if o.pad {
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
