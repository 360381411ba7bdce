package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/node"
)

func init() { register("relay", newRelayCmd) }

// probFlag is a pflag.Value for a probability: "5%" or a fraction 0..1
// ("0.05"). A bare number above 1 is refused (write 5% for five percent).
type probFlag struct{ v float64 }

func (p *probFlag) String() string {
	if p.v == 0 {
		return "0"
	}
	return strconv.FormatFloat(p.v*100, 'g', -1, 64) + "%"
}
func (p *probFlag) Type() string { return "P" }
func (p *probFlag) Set(s string) error {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil {
		return fmt.Errorf("%q is not a probability: write a percentage such as 5%% or a fraction such as 0.05", s)
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v <= 1) {
		return fmt.Errorf("%q is out of range: a probability is 0%% through 100%% (0 through 1; write 5%% for five percent)", s)
	}
	p.v = v
	return nil
}

func newRelayCmd() *cobra.Command {
	var cfg node.RelayConfig
	var loss, dup, reorder, corrupt probFlag
	var seed u32Flag
	var jsonOut bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "relay IF1 IF2 [--loss P] [--dup P] [--reorder P] [--delay D] [--jitter D] [--corrupt P] [--seed N]",
		Short: "Forward frames between two interfaces through an impaired link (loss, duplication, reordering, delay, corruption)",
		Long: `relay carries every frame between interfaces IF1 and IF2 (raw sockets in
promiscuous mode, every EtherType), and impairs each direction on its own, like
tc netem where that is not available: host software can be tried against a bad
link without a bad cable. Put it between two hosts (or a host and a board)
whose only path is through this machine, such as two veth pairs.

Per frame, in this order: --loss drops it; --corrupt flips one random bit (the
frame is delivered: oETP v1 has no integrity check, so data bits reach memory);
--dup delivers it twice; --reorder holds it back until the next frame of its
direction has gone (or --reorder-hold has passed); --delay and --jitter deliver
it D ± J later (uniform; frames overtake each other when J is larger than their
spacing). Probabilities are percentages (5%) or fractions (0.05). --seed makes
a run repeatable: the same frames get the same fate.

It runs until SIGINT or SIGTERM, then prints what it did in each direction
(--stats prints it periodically too; --json as one JSON object per line).`,
		Example: `  oetp relay veth-a veth-b --loss 5%
  oetp relay veth-a veth-b --loss 5% --dup 1% --reorder 25% --delay 5ms --jitter 2ms --corrupt 1% --seed 7`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("%s needs two interfaces, IF1 and IF2; got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Loss, cfg.Duplicate, cfg.Reorder, cfg.Corrupt, cfg.Seed = loss.v, dup.v, reorder.v, corrupt.v, uint64(seed.v)
			if cfg.Delay < 0 || cfg.Jitter < 0 || cfg.ReorderHold < 0 || every < 0 {
				return usagef("--delay, --jitter, --reorder-hold and --stats must not be negative")
			}
			if args[0] == args[1] {
				return usagef("IF1 and IF2 are both %s: name two different interfaces", args[0])
			}
			r, err := node.OpenRelay(args[0], args[1], cfg)
			if err != nil {
				var ce *node.ConfigError
				if errors.As(err, &ce) {
					return usagef("interface%s", ce.Msg)
				}
				return usagef("%v", err)
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			log := cmd.ErrOrStderr()
			fmt.Fprintf(log, "relay %s <-> %s: loss %s dup %s reorder %s corrupt %s delay %v jitter %v seed %d\n",
				args[0], args[1], &loss, &dup, &reorder, &corrupt, cfg.Delay, cfg.Jitter, seed.v)
			report := func(final bool) error {
				ab, ba := r.Stats()
				if jsonOut {
					enc := json.NewEncoder(cmd.OutOrStdout())
					return enc.Encode(map[string]any{"event": "stats", "final": final,
						args[0] + "->" + args[1]: relayJSON(ab), args[1] + "->" + args[0]: relayJSON(ba)})
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s: %v\n%s -> %s: %v\n", args[0], args[1], ab, args[1], args[0], ba)
				return err
			}
			var tick <-chan time.Time
			if every > 0 {
				t := time.NewTicker(every)
				defer t.Stop()
				tick = t.C
			}
		loop:
			for {
				select {
				case <-ctx.Done():
					break loop
				case <-tick:
					if err := report(false); err != nil {
						r.Close()
						return err
					}
				}
			}
			r.Close()
			return report(true)
		},
	}
	fs := cmd.Flags()
	fs.Var(&loss, "loss", "drop each frame with probability `P` (5% or 0.05)")
	fs.Var(&dup, "dup", "deliver each frame twice with probability `P`")
	fs.Var(&reorder, "reorder", "hold each frame back behind the next one with probability `P`")
	fs.Var(&corrupt, "corrupt", "flip one random bit of each frame with probability `P`")
	fs.DurationVar(&cfg.Delay, "delay", 0, "deliver every frame `D` later")
	fs.DurationVar(&cfg.Jitter, "jitter", 0, "vary each frame's delay uniformly by ±`D`")
	fs.DurationVar(&cfg.ReorderHold, "reorder-hold", node.DefaultReorderHold, "release a held frame after `D` when no frame follows it")
	fs.Var(&seed, "seed", "seed `N` of the random choices (the same seed and frames give the same fate)")
	fs.DurationVar(&every, "stats", 0, "also print the counters every `D` (0: only at the end)")
	fs.BoolVar(&jsonOut, "json", false, "print the counters as JSON objects, one per line")
	return cmd
}

func relayJSON(s node.RelayStats) map[string]uint64 {
	return map[string]uint64{"received": s.Received, "sent": s.Sent, "dropped": s.Dropped, "duplicated": s.Duplicated,
		"reordered": s.Reordered, "corrupted": s.Corrupted, "delayed": s.Delayed, "write_errors": s.WriteErrs, "read_errors": s.ReadErrs}
}
