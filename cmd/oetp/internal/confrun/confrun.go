// Package confrun is `oetp conformance run` once its flags are checked: the
// runner's initiator roles and its link on the interface, the capture of
// the cases' frames, the run itself (package conformance), interruptible,
// and its report as text, JSON and JUnit XML; and the list of the cases
// that `oetp conformance list` prints.
package confrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

// Config is a checked conformance run.
type Config struct {
	Iface    string // --iface
	MaxFrame int    // the frame ceiling of --iface
	Target   wire.MAC
	DUT      *conformance.DUT
	Only     []string      // --only
	Timeout  time.Duration // --timeout
	Wait     time.Duration // --wait for the runner's roles
	LinkPads bool          // --link-pads
	Pcap     string        // --pcap: the cases' frames
	JSON     bool          // --json
	JUnit    string        // --junit
}

// Run runs the cases of c on the command's behalf and prints the report on
// its standard output: nil when no case failed, a usage error (exit 2)
// when the interface or a role cannot be had, an interrupted error after
// SIGINT or SIGTERM, else the failure naming the failed cases.
func Run(cmd *cobra.Command, c Config) error {
	// One socket receives the replies to every peer MAC: the interface
	// registers them (PACKET_MR_UNICAST), no promiscuous mode unless there
	// are too many.
	listen := conformance.ListenAddrs(c.DUT)
	locks, err := session.AcquireRoles(c.Iface, listen, role.Initiator, c.Wait)
	if err != nil {
		return err
	}
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	lcfg := node.LinkConfig{Iface: c.Iface, MaxFrame: c.MaxFrame, AnyFrame: true, Shared: true}
	if len(listen) <= node.MaxExtraAddrs {
		lcfg.ExtraAddrs = listen
	}
	nl, err := node.OpenLink(lcfg)
	if err != nil {
		var ce *node.ConfigError
		if errors.As(err, &ce) {
			err = ce.Err
		}
		return cli.Usagef("%v", err)
	}
	l := nl.Link
	o := conformance.Options{Link: l, Receives: lcfg.ExtraAddrs != nil, Target: c.Target, DUT: c.DUT, Only: c.Only, Timeout: c.Timeout, LinkPads: c.LinkPads}
	var capf *node.Capture
	if c.Pcap != "" {
		if capf, err = node.CreateCapture(c.Pcap, node.PcapNG); err != nil {
			l.Close()
			return cli.Err(err)
		}
		o.Pcap = capf.Writer()
	}
	var rep *conformance.Report
	err = interrupt.Run(cmd, "oetp conformance run", interrupt.Grace, func(ctx context.Context) (err error) {
		rep, err = conformance.Run(ctx, o)
		return err
	})
	if capf != nil {
		if cerr := capf.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	return report(cmd, c, rep)
}

// report prints the report (text, or JSON with the frames of failed cases
// on standard error), writes --junit, and returns the run's failure.
func report(cmd *cobra.Command, c Config, rep *conformance.Report) error {
	out := cmd.OutOrStdout()
	if c.JSON {
		if err := rep.WriteJSON(out); err != nil {
			return err
		}
		rep.WriteFailures(cmd.ErrOrStderr())
	} else if err := rep.WriteText(out); err != nil {
		return err
	}
	if c.JUnit != "" {
		f, err := os.Create(c.JUnit)
		if err != nil {
			return fmt.Errorf("--junit %s", cli.FileWords(err))
		}
		err = rep.WriteJUnit(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--junit %s: %w", c.JUnit, err)
		}
	}
	if !rep.OK() {
		return fmt.Errorf("%d of %d conformance cases failed (%s)", rep.Failed, len(rep.Cases), rep.Summary())
	}
	return nil
}

// List prints the cases: for each its ID, rule, role and the DUT keys it
// needs, under its section; with asJSON one JSON array.
func List(out io.Writer, asJSON bool) error {
	cases := conformance.Cases()
	if asJSON {
		type item struct {
			ID      string   `json:"id"`
			Section string   `json:"section"`
			Role    string   `json:"role"`
			Rule    string   `json:"rule"`
			Needs   []string `json:"needs"`
		}
		items := make([]item, 0, len(cases))
		for _, c := range cases {
			items = append(items, item{c.ID, c.Section, string(c.Role), c.Rule, append([]string{}, c.Needs...)})
		}
		b, err := json.Marshal(items)
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
	var b strings.Builder
	section := ""
	for _, c := range cases {
		if c.Section != section {
			section = c.Section
			fmt.Fprintf(&b, "%s\n", section)
		}
		fmt.Fprintf(&b, "  %-16s %s\n", c.ID, c.Rule)
		if c.Role == conformance.Initiator {
			fmt.Fprintf(&b, "  %-16s role: initiator (the device sends, the runner answers)\n", "")
		}
		if len(c.Needs) > 0 {
			fmt.Fprintf(&b, "  %-16s needs: %s\n", "", strings.Join(c.Needs, ", "))
		}
	}
	fmt.Fprintf(&b, "%d cases\n", len(cases))
	_, err := fmt.Fprint(out, b.String())
	return err
}
