// gospin: a CPU-bound Go test program for the eBPF sampler with a known
// stack, main.main -> main.goOuter -> main.goInner. Usage: gospin MILLISECONDS
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func goInner(until time.Time) {
	x := uint64(1)
	for time.Now().Before(until) {
		for i := 0; i < 2000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}

//go:noinline
func goOuter(until time.Time) {
	goInner(until)
	sink++
}

func main() {
	ms := 5000
	if len(os.Args) > 1 {
		ms, _ = strconv.Atoi(os.Args[1])
	}
	goOuter(time.Now().Add(time.Duration(ms) * time.Millisecond))
}
