// Command hello is the floor of a Go program's start for BenchmarkHub's
// shell-loop rows: a hello-world, built as the tests build oetp.
package main

import "fmt"

func main() { fmt.Println("hello, world") }
