// golabels: a Go test program for the eBPF sampler's Go labels. One
// goroutine, locked to its thread, runs CPU work under two pprof label sets
// in turn, three chunks under the first for one under the second, and
// measures the thread CPU time each set used. Usage: golabels SECONDS
// Prints: checkout_ns=N search_ns=N
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

var sink uint64

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec

	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

//go:noinline
func spin(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

func main() {
	secs, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: golabels SECONDS")
		os.Exit(2)
	}
	runtime.LockOSThread()
	sets := []pprof.LabelSet{
		pprof.Labels("handler", "checkout", "tier", "gold"),
		pprof.Labels("handler", "search", "tier", "free"),
	}
	reps := []int{3, 1}
	var cpu [2]int64
	ctx := context.Background()
	until := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(until) {
		for k := range sets {
			pprof.Do(ctx, sets[k], func(context.Context) {
				t0 := threadCPU()
				for r := 0; r < reps[k]; r++ {
					spin(1000000)
				}
				cpu[k] += threadCPU() - t0
			})
		}
	}
	fmt.Printf("checkout_ns=%d search_ns=%d\n", cpu[0], cpu[1])
}
