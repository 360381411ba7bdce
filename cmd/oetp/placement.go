package main

import "github.com/openenoc/oetp/cmd/oetp/internal/cli"

// placementUsage is the help of --placement (cli.Placement says what it
// does).
const placementUsage = "thread placement `P`: auto (serve moves to the CPU its requests arrive on; a one-shot command stays on the CPU it started on) or off (the kernel's scheduler places the threads)"

// placementFlag is the pflag.Value of --placement.
type placementFlag struct{ p cli.Placement }

func (f *placementFlag) String() string { return f.p.String() }
func (f *placementFlag) Type() string   { return "P" }
func (f *placementFlag) Set(s string) error {
	p, err := cli.ParsePlacement(s)
	f.p = p
	return err
}
