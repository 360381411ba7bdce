// Command teamlibs is the floor of a Go program's start that links the
// libraries the team's rules name and oetp's one binary needs for its
// commands (DEVELOPERS.md): client_golang for metrics, gopacket's pcapgo
// for pcap files, cobra, BurntSushi/toml, progressbar, netlink and x/sys.
// It does nothing else: BenchmarkHub's shell-loop rows compare `oetp`
// starts with it. Package init functions run before main whether or not
// anything calls them.
package main

import (
	"fmt"

	_ "github.com/BurntSushi/toml"
	_ "github.com/gopacket/gopacket/pcapgo"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/vishvananda/netlink"
	_ "golang.org/x/sys/unix"
)

func main() { fmt.Println("hello, world") }
