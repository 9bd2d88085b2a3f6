// golabels: a Go test program for the eBPF sampler's Go labels.
//
// golabels split CPU_SECONDS MAX_SECONDS: one goroutine, locked to its
// thread, runs CPU work under two pprof label sets in turn, three chunks
// under the first for one under the second (of random lengths, 1 million
// rounds on average), and measures the thread CPU
// time each set used, until both used CPU_SECONDS in all or MAX_SECONDS went
// by (a busy host gives it less CPU). Prints: checkout_ns=N search_ns=N
// iters=N (rounds of both sets done: the work that CPU time bought)
//
// golabels wait SECONDS 0: the same two label sets, three waits of 2 ms
// under the first for one of 6 ms under the second (as much time, three
// times the waits), each a nanosleep system call made by the goroutine
// itself (its thread blocks with it, its labels in reach), for SECONDS,
// measuring the time each set waited and counting its waits. Prints:
// checkout_ns=N search_ns=N checkout_waits=N search_waits=N
//
// golabels many CPU_SECONDS MAX_SECONDS: the same work under 64 label sets
// in turn (req=0..63, each with a value too long to be kept, long=x...),
// more than the sampler makes series of. Prints: done
package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
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
	if len(os.Args) != 4 || (os.Args[1] != "split" && os.Args[1] != "many" && os.Args[1] != "wait") {
		fmt.Fprintln(os.Stderr, "usage: golabels split|many|wait CPU_SECONDS MAX_SECONDS")
		os.Exit(2)
	}
	cpuSecs, err1 := strconv.Atoi(os.Args[2])
	maxSecs, err2 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "usage: golabels split|many|wait CPU_SECONDS MAX_SECONDS")
		os.Exit(2)
	}
	runtime.LockOSThread()
	if os.Args[1] == "wait" {
		wait(cpuSecs)
		return
	}
	if os.Args[1] == "many" {
		many(cpuSecs, maxSecs)
		return
	}
	sets := []pprof.LabelSet{
		pprof.Labels("handler", "checkout", "tier", "gold"),
		pprof.Labels("handler", "search", "tier", "free"),
	}
	reps := []int{3, 1}
	var cpu [2]int64
	iters := 0
	ctx := context.Background()
	until := time.Now().Add(time.Duration(maxSecs) * time.Second)
	for cpu[0]+cpu[1] < int64(cpuSecs)*1e9 && time.Now().Before(until) {
		for k := range sets {
			pprof.Do(ctx, sets[k], func(context.Context) {
				t0 := threadCPU()
				for r := 0; r < reps[k]; r++ {
					// Chunks of random length: no rhythm for the
					// sampling timer or the scheduler to lock on to.
					spin(500000 + rand.Intn(1000000))
				}
				cpu[k] += threadCPU() - t0
			})
		}
		iters++
	}
	fmt.Printf("checkout_ns=%d search_ns=%d iters=%d\n", cpu[0], cpu[1], iters)
}

func many(cpuSecs, maxSecs int) {
	var sets []pprof.LabelSet
	for i := 0; i < 64; i++ {
		sets = append(sets, pprof.Labels("req", strconv.Itoa(i), "long", strings.Repeat("x", 200)))
	}
	ctx := context.Background()
	t0 := threadCPU()
	until := time.Now().Add(time.Duration(maxSecs) * time.Second)
	for threadCPU()-t0 < int64(cpuSecs)*1e9 && time.Now().Before(until) {
		for k := range sets {
			pprof.Do(ctx, sets[k], func(context.Context) { spin(1000000) })
		}
	}
	fmt.Println("done")
}

func wait(secs int) {
	sets := []pprof.LabelSet{
		pprof.Labels("handler", "checkout", "tier", "gold"),
		pprof.Labels("handler", "search", "tier", "free"),
	}
	reps := []int{3, 1}
	lens := []int64{2000000, 6000000}
	var waited, n [2]int64
	ctx := context.Background()
	until := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(until) {
		for k := range sets {
			pprof.Do(ctx, sets[k], func(context.Context) {
				for r := 0; r < reps[k]; r++ {
					ts := syscall.Timespec{Nsec: lens[k]}
					t0 := time.Now()
					syscall.Nanosleep(&ts, nil)
					waited[k] += int64(time.Since(t0))
					n[k]++
				}
			})
		}
	}
	fmt.Printf("checkout_ns=%d search_ns=%d checkout_waits=%d search_waits=%d\n",
		waited[0], waited[1], n[0], n[1])
}
