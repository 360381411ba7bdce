package main

import (
	"encoding/hex"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
)

func init() { register("encode", newEncodeCmd) }

// causeValue is the pflag.Value of --cause (frames.ParseCause).
type causeValue struct{ v uint32 }

func (c *causeValue) String() string { return fmt.Sprint(c.v) }
func (c *causeValue) Type() string   { return "CAUSE" }
func (c *causeValue) Set(s string) (err error) {
	c.v, err = frames.ParseCause(s)
	return err
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
			frame, err := frames.Encode(args[0], frames.Params{Dst: o.dst.m, Src: o.src.m, RID: o.rid.v, Addr: o.addr.v,
				Length: o.length.v, Mask: o.mask.v, Data: o.data.v, Cause: o.cause.v, Payload: o.payload.b,
				PayloadFile: o.payloadFile, Pad: o.pad, Set: cmd.Flags().Changed})
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
