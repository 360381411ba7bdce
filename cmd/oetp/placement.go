package main

import "fmt"

// Placement of the threads of serve and the one-shot commands
// (--placement, config key placement). A stop-and-wait exchange between
// two processes runs fastest with both on one CPU: each frame then wakes
// the other process on the CPU it was sent from, where a wake-up across
// CPUs costs tens of µs on a VM whose idle vCPU is halted. The kernel's
// scheduler does not keep them together on its own: it wakes a thread on
// its previous CPU when that CPU is idle.
//
//   - auto (the default): serve moves its threads to the CPU its requests
//     are received on (afpacket Config.FollowCPU: after two receive
//     batches in a row from one other CPU, at most every 10 ms, within the
//     CPUs it was given), and a one-shot rmem or dma command keeps all its
//     threads on the CPU it started on, so that over veth serve follows it
//     there. Only for an endpoint that waits in a blocking receive: not
//     with --busy-poll (a spinning loop must not share its peer's CPU),
//     not through a hub, never outside the process's affinity mask (taskset
//     still decides), and nothing on a process given one CPU.
//   - off: the threads are left to the kernel's scheduler, as before.
type placeMode int

const (
	placeAuto placeMode = iota
	placeOff
)

// placementUsage is the help of --placement.
const placementUsage = "thread placement `P`: auto (serve moves to the CPU its requests arrive on; a one-shot command stays on the CPU it started on) or off (the kernel's scheduler places the threads)"

func parsePlacement(s string) (placeMode, error) {
	switch s {
	case "auto":
		return placeAuto, nil
	case "off":
		return placeOff, nil
	}
	return placeAuto, fmt.Errorf("%q: use auto or off", s)
}

func (p placeMode) String() string {
	if p == placeOff {
		return "off"
	}
	return "auto"
}

// placementFlag is the pflag.Value of --placement.
type placementFlag struct{ p placeMode }

func (f *placementFlag) String() string { return f.p.String() }
func (f *placementFlag) Type() string   { return "P" }
func (f *placementFlag) Set(s string) error {
	p, err := parsePlacement(s)
	f.p = p
	return err
}
