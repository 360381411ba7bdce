package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
)

// runInterruptible runs a long command's work until it returns or a signal
// interrupts it (interrupt.Run).
func runInterruptible(cmd *cobra.Command, what string, grace time.Duration, work func(ctx context.Context) error) error {
	return interrupt.Run(cmd, what, grace, work)
}
