package main

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/wire"
)

func init() { register("decode", newDecodeCmd) }

func newDecodeCmd() *cobra.Command {
	maxFrame := &intFlag{v: wire.MaxFrameLen}
	expect := &u32Flag{}
	cmd := &cobra.Command{
		Use:   "decode [HEX...]",
		Short: "Decode oETP frames given in hex into JSON, one object per line",
		Long: `decode prints one JSON object per frame, one per line. Each argument is the hex
of one frame, from the destination MAC through the last payload or padding
byte (no preamble, SFD or FCS); without arguments decode reads one frame per
line from standard input, skipping blank lines and lines starting with '#'.
Spaces, colons and 0x prefixes may separate groups of whole bytes.

A DMA_READ_RSP carries no length of its own: give the Length of the
DMA_READ_REQ it answers with --expect-length, or decode reports it as not
valid with "needs --expect-length".

A frame that is not valid oETP is still decoded (valid false, with the
problem); the exit status is 2 when an argument is not hex, and 1 when a line
of standard input is not hex (the other lines are still decoded).`,
		Example: `  oetp decode 020e0c00000b020e0c00000a88b50e104433221100100000
  oetp decode --expect-length 5 "020e0c00000a 020e0c00000b 88b5 0e31 21000000 b0b1b2b3 b4000000 efbeadde"
  oetp encode RMEM_READ_REQ --dst 02:0e:0c:00:00:0b --src 02:0e:0c:00:00:0a --rid 1 --addr 0x1000 | oetp decode`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.CheckMaxFrame(maxFrame.v); err != nil {
				return usagef("--max-frame: %v", err)
			}
			opt := frames.Options{MaxFrame: maxFrame.v}
			if cmd.Flags().Changed("expect-length") {
				opt.ExpectLength = &expect.v
			}
			return runDecode(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opt)
		},
	}
	cmd.Flags().Var(expect, "expect-length", "Length `N` of the DMA_READ_REQ that a DMA_READ_RSP answers (decimal or 0x hex)")
	cmd.Flags().Var(maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (MAX_RAW_FRAME_SIZE)")
	return cmd
}

func runDecode(stdin io.Reader, stdout, stderr io.Writer, args []string, opt frames.Options) error {
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if len(args) > 0 {
		bs := make([][]byte, len(args))
		for i, a := range args {
			b, err := frames.ParseHex(a)
			if err != nil {
				return usagef("argument %d: %v", i+1, err)
			}
			bs[i] = b
		}
		for _, b := range bs {
			if err := enc.Encode(frames.Describe(b, opt)); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	return frames.DecodeLines(stdin, w, stderr, opt)
}
