package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteSVG draws the report as an SVG picture: for each of the veth and
// mem scenarios, DMA throughput against block size with the baselines as
// horizontal lines; below, where the time of one operation goes: the raw
// ping-pong of the same frames (the medium) and what the engine adds.
// Scenarios without results are left out; a report without any engine
// result gives a picture that says so.
func (rep *Report) WriteSVG(w io.Writer) error {
	const (
		width  = 980
		panelH = 300
		top    = 56
	)
	var panels []string
	for _, s := range svgScenarios {
		if rep.has(s, opDMAWrite) || rep.has(s, opDMARead) {
			panels = append(panels, s)
		}
	}
	bars := rep.breakdown()
	height := top + 40
	if len(panels) > 0 {
		height += panelH + 50
	}
	height += 28*len(bars) + 110
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	m := rep.Machine
	title := fmt.Sprintf("oetp bench: engine against the medium's own limit (%s/%s, %d CPUs, %s)", m.GOOS, m.GOARCH, m.CPUs, m.Go)
	fmt.Fprintf(&b, `<text x="20" y="26" font-size="16" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(&b, `<text x="20" y="44" fill="#555">DMA MB/s against block size, one 8160-byte fragment per round trip (oETP v1). Dashed: raw ping-pongs of the same frames, same medium, same run.</text>`+"\n")
	y := top + 10
	if len(panels) > 0 {
		pw := (width - 40) / len(panels)
		for i, s := range panels {
			rep.throughputPanel(&b, s, 20+i*pw, y, pw-20, panelH)
		}
		y += panelH + 50
	}
	if len(bars) == 0 && len(panels) == 0 {
		fmt.Fprintf(&b, `<text x="20" y="%d">No engine results in this run: run the mem or veth scenario.</text>`+"\n", y+20)
	} else {
		writeBreakdown(&b, bars, 20, y, width-40)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgScenarios are the scenarios drawn, in order.
var svgScenarios = []string{ScenarioVeth, ScenarioVethBusy, ScenarioMem}

func esc(s string) string { return html.EscapeString(s) }

func (rep *Report) has(scenario, name string) bool {
	for _, r := range rep.Results {
		if r.Scenario == scenario && r.Name == name && r.Ops > 0 {
			return true
		}
	}
	return false
}

// seriesColors are the colours of the write and read lines.
var seriesColors = map[string]string{opDMAWrite: "#1f77b4", opDMARead: "#d62728"}

// throughputPanel draws MB/s against block size (log scale) for the DMA
// results of one scenario, and each baseline's MB/s as a dashed line.
func (rep *Report) throughputPanel(b *strings.Builder, scenario string, x, y, w, h int) {
	const padL, padB, padT = 56, 36, 24
	px, py, pw, ph := x+padL, y+padT, w-padL-10, h-padT-padB
	type pt struct{ x, y float64 }
	series := map[string][]pt{}
	var ymax float64
	minB, maxB := math.Inf(1), math.Inf(-1)
	for _, r := range rep.Results {
		if r.Scenario != scenario || r.Ops == 0 {
			continue
		}
		if (r.Name == opDMAWrite || r.Name == opDMARead) && r.Block > 0 {
			lb := math.Log2(float64(r.Block))
			series[r.Name] = append(series[r.Name], pt{lb, r.MBps})
			minB, maxB = math.Min(minB, lb), math.Max(maxB, lb)
			ymax = math.Max(ymax, r.MBps)
		}
	}
	bases := rep.dmaBaselines(scenario)
	for _, bl := range bases {
		ymax = math.Max(ymax, bl.mbps)
	}
	if maxB <= minB {
		minB, maxB = minB-1, maxB+1
	}
	ymax = niceCeil(ymax * 1.08)
	sx := func(v float64) float64 { return float64(px) + (v-minB)/(maxB-minB)*float64(pw) }
	sy := func(v float64) float64 { return float64(py+ph) - v/ymax*float64(ph) }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", x, y+12, esc(scenarioTitle(scenario)))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		yy := sy(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", px, yy, px+pw, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%.0f</text>`+"\n", px-4, yy+4, v)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555" transform="rotate(-90 %d %d)" text-anchor="middle">MB/s</text>`+"\n", x+12, py+ph/2, x+12, py+ph/2)
	// A label is about 40 px wide: label every power of two, every
	// other one or every fourth, whichever fits.
	step := 1.0
	for float64(pw)/((maxB-minB)/step+1) < 44 && step < 8 {
		step *= 2
	}
	for lb := math.Ceil(minB); lb <= maxB; lb += step {
		xx := sx(lb)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", xx, py+ph, xx, py+ph+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", xx, py+ph+16, SizeString(int64(math.Exp2(lb))))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">block size</text>`+"\n", px+pw/2, py+ph+32)
	ly := py + 14
	for i, bl := range bases {
		yy := sy(bl.mbps)
		c := seriesColors[bl.op]
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4" stroke-width="1.5"/>`+"\n", px, yy, px+pw, yy, c)
		// The higher line's label above it, the lower one's below, so
		// that they do not overprint when the two baselines are close.
		ty := yy - 4
		if i%2 == 1 && bl.mbps <= bases[0].mbps || i == 0 && len(bases) > 1 && bl.mbps < bases[1].mbps {
			ty = yy + 13
		}
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="%s">%s: %.0f MB/s</text>`+"\n", px+pw-4, ty, c, esc(bl.name), bl.mbps)
	}
	for _, op := range []string{opDMAWrite, opDMARead} {
		pts := series[op]
		if len(pts) == 0 {
			continue
		}
		var path strings.Builder
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, sx(p.x), sy(p.y))
		}
		c := seriesColors[op]
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.TrimSpace(path.String()), c)
		for _, p := range pts {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", sx(p.x), sy(p.y), c)
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", px+8, ly-4, px+28, ly-4, c)
		fmt.Fprintf(b, `<text x="%d" y="%d">engine %s</text>`+"\n", px+32, ly, op)
		ly += 16
	}
}

func scenarioTitle(s string) string {
	switch s {
	case ScenarioVeth:
		return "veth, AF_PACKET"
	case ScenarioVethBusy:
		return "veth, busy-polling links"
	case ScenarioMem:
		return "link/mem switch"
	}
	return s
}

type dmaBase struct {
	op, name string
	mbps     float64
}

// dmaBaselines returns, for each DMA direction of a scenario, the baseline
// its engine rows were compared with.
func (rep *Report) dmaBaselines(scenario string) []dmaBase {
	var out []dmaBase
	for _, op := range []string{opDMAWrite, opDMARead} {
		for _, r := range rep.Results {
			if r.Scenario == scenario && r.Name == op && r.Versus != "" {
				if base := rep.Find(scenario, r.Versus, 0); base != nil {
					out = append(out, dmaBase{op: op, name: base.Name, mbps: base.MBps})
				}
				break
			}
		}
	}
	return out
}

// bar is one row of the time breakdown: an operation's time per round
// trip (engine), the raw ping-pong's time for the same frames (medium), and
// the part of the engine's extra time that is protocol work, estimated from
// the codec rows of the same run (0 without them).
type bar struct {
	label                    string
	medium, engine, protocol float64 // microseconds
}

// breakdown returns a bar per engine path and scenario: RMEM read p50, and
// for DMA the mean time per fragment of the largest block.
func (rep *Report) breakdown() []bar {
	var out []bar
	for _, s := range svgScenarios {
		if r := rep.Find(s, opRMEMRead, 0); r != nil && r.Ops > 0 {
			if base := rep.Find(s, r.Versus, 0); base != nil {
				out = append(out, bar{label: s + " RMEM read (p50)", medium: us(base.P50.Nanoseconds()), engine: us(r.P50.Nanoseconds()),
					protocol: rep.codecNs("encode RMEM_READ_REQ", "decode RMEM_READ_REQ", "encode RMEM_READ_RSP", "decode RMEM_READ_RSP") / 1e3})
			}
		}
		for _, op := range []string{opDMAWrite, opDMARead} {
			var big *Result
			for i := range rep.Results {
				r := &rep.Results[i]
				if r.Scenario == s && r.Name == op && r.Ops > 0 && (big == nil || r.Block > big.Block) {
					big = r
				}
			}
			if big == nil || big.MBps <= 0 {
				continue
			}
			base := rep.Find(s, big.Versus, 0)
			if base == nil || base.MBps <= 0 {
				continue
			}
			perFrag := func(mbps float64) float64 { return 8160 / mbps } // µs per 8160-byte fragment
			// The 20- and 28-byte frames of a fragment's exchange cost what
			// the RMEM frames cost; the 8 KiB frame includes its payload copy.
			work := rep.codecNs("encode DMA_WRITE_REQ", "decode DMA_WRITE_REQ", "encode RMEM_READ_RSP", "decode RMEM_READ_RSP")
			if op == opDMARead {
				work = rep.codecNs("encode RMEM_READ_REQ", "decode RMEM_READ_REQ", "encode DMA_READ_RSP", "decode DMA_READ_RSP")
			}
			out = append(out, bar{label: fmt.Sprintf("%s %s fragment (%s block)", s, strings.TrimPrefix(op, "dma-"), SizeString(big.Block)),
				medium: perFrag(base.MBps), engine: perFrag(big.MBps), protocol: work / 1e3})
		}
	}
	return out
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// codecNs returns the sum of the named codec rows' ns/op, or 0 unless all
// of them are in the report.
func (rep *Report) codecNs(names ...string) float64 {
	var sum float64
	for _, n := range names {
		r := rep.Find(ScenarioCodec, n, 0)
		if r == nil {
			return 0
		}
		sum += r.NsPerOp
	}
	return sum
}

// writeBreakdown draws the bars: the medium's time in grey, the engine's
// extra time in orange, with the totals and their ratio.
func writeBreakdown(b *strings.Builder, bars []bar, x, y, w int) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">Where the time of one round trip goes</text>`+"\n", x, y+12)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="#bbb"/><text x="%d" y="%d">medium: the raw ping-pong of the same frames (kernel, veth or switch, thread wake-ups)</text>`+"\n", x, y+22, x+16, y+32)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="#2ca02c"/><text x="%d" y="%d">protocol work: encoding and decoding both frames, payload copies included (from the codec rows)</text>`+"\n", x, y+40, x+16, y+50)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="#ff7f0e"/><text x="%d" y="%d">the rest of what the engine adds: Go scheduler and network poller, goroutine wake-ups, a read per frame that finds the socket empty</text>`+"\n", x, y+58, x+16, y+68)
	var maxT float64
	for _, br := range bars {
		maxT = math.Max(maxT, math.Max(br.medium, br.engine))
	}
	if maxT == 0 {
		return
	}
	const labelW, barH, gap = 250, 20, 8
	bw := float64(w - labelW - 260)
	yy := y + 82
	for _, br := range bars {
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x, yy+14, esc(br.label))
		med := math.Min(br.medium, br.engine)
		mw := med / maxT * bw
		tw := br.engine / maxT * bw
		pw := math.Min(br.protocol/maxT*bw, tw-mw)
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="#bbb"/>`+"\n", x+labelW, yy, mw, barH)
		if pw > 0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#2ca02c"/>`+"\n", float64(x+labelW)+mw, yy, pw, barH)
		}
		if tw > mw+max(pw, 0) {
			fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#ff7f0e"/>`+"\n", float64(x+labelW)+mw+max(pw, 0), yy, tw-mw-max(pw, 0), barH)
		}
		ratio := 0.0
		if br.medium > 0 {
			ratio = br.engine / br.medium
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%.1f µs (medium %.1f µs, %.2f×)</text>`+"\n", float64(x+labelW)+math.Max(tw, mw)+6, yy+14, br.engine, br.medium, ratio)
		yy += barH + gap
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
