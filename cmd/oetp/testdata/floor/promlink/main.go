// Command promlink is the floor of a Go program's start that links
// prometheus/client_golang as oetp does (the team's metrics library) and
// does nothing else: BenchmarkHub's shell-loop rows compare `oetp` starts
// with it. The packages' init functions run before main whether or not
// anything calls them.
package main

import (
	"fmt"

	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() { fmt.Println("hello, world") }
