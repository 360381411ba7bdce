package oneshot

import (
	"context"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
)

// Progress returns a context that drives a progress bar on stderr for a DMA
// block of n bytes when stderr is a terminal, and a function that finishes
// the bar.
func Progress(ctx context.Context, cmd *cobra.Command, what string, n int64) (context.Context, func()) {
	w := cmd.ErrOrStderr()
	if !isTerminal(w) || n == 0 {
		return ctx, func() {}
	}
	bar := progressbar.NewOptions64(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	// The endpoint reports from its receive loop: only store the figure
	// there, and draw the bar from a goroutine of its own, so that a slow
	// terminal never holds up the transfer.
	bar.RenderBlank() // the bar shows at once, also for a block faster than a tick
	var done atomic.Uint64
	fn := func(d uint64) { done.Store(d) }
	ctx = dmafile.WithProgress(ctx, fn)
	stop := make(chan struct{})
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				bar.Set64(int64(done.Load()))
				return
			case <-t.C:
				bar.Set64(int64(done.Load()))
			}
		}
	}()
	return ctx, func() { close(stop); <-drawn; bar.Finish() }
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
