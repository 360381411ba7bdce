package demo

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/openenoc/oetp/wire"
)

// WriteText prints the summary table, one line per step with the codes both
// sides recorded, then one SHA-256 line per node and a verdict line:
//
//	sha256 master  <64 hex digits>  source
//	sha256 slave1  <64 hex digits>  equal
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTEP\tEXPECT\tRESULT\tMASTER\tSLAVE\tBYTES\tTIME\tDETAIL")
	for i, s := range r.Steps {
		res := "ok"
		if !s.OK {
			res = "FAILED"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s %s\t%d\t%s\t%s\n", i+1, s.Name, s.Expect, res,
			code(s.Master), s.SlaveName, code(s.Slave), s.Bytes, dur(s.Elapsed), s.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range r.Digests {
		what := "equal"
		switch {
		case d.Node == "master":
			what = "source"
		case !d.Equal:
			what = "DIFFERENT"
		}
		fmt.Fprintf(w, "sha256 %-7s %s  %s\n", d.Node, d.SHA256, what)
	}
	failed := 0
	for _, s := range r.Steps {
		if !s.OK {
			failed++
		}
	}
	var err error
	if r.OK {
		_, err = fmt.Fprintf(w, "demo: OK: all %d steps had their expected outcome (%.3fs)\n", len(r.Steps), r.Seconds)
	} else {
		_, err = fmt.Fprintf(w, "demo: FAILED: %d of %d steps did not have their expected outcome (%.3fs)\n", failed, len(r.Steps), r.Seconds)
	}
	return err
}

// code formats a CSR code as "MNEMONIC(n)".
func code(c wire.Code) string { return fmt.Sprintf("%s(%d)", c, uint8(c)) }

// dur formats a step time with a unit that suits it.
func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
