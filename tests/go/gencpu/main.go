// gencpu writes Go CPU profiles (runtime/pprof) of 5-15 KB for the HTTP
// ingest benchmark: a workload with many distinct stacks (16 step functions,
// recursion 4-14 deep, 8 leaves) under pprof labels, as a busy service's
// profile looks.
//
//	gencpu -out DIR -n 64 -dur 1s
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

//go:noinline
func spin(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

var steps []func(int, int) uint64
var leaves []func(int) uint64

func init() {
	steps = []func(int, int) uint64{
		func(d, n int) uint64 { return recurse(d-1, n*31+0) + 0 },
		func(d, n int) uint64 { return recurse(d-1, n*33+1) + 1 },
		func(d, n int) uint64 { return recurse(d-1, n*35+2) + 2 },
		func(d, n int) uint64 { return recurse(d-1, n*37+3) + 3 },
		func(d, n int) uint64 { return recurse(d-1, n*39+4) + 4 },
		func(d, n int) uint64 { return recurse(d-1, n*41+5) + 5 },
		func(d, n int) uint64 { return recurse(d-1, n*43+6) + 6 },
		func(d, n int) uint64 { return recurse(d-1, n*45+7) + 7 },
		func(d, n int) uint64 { return recurse(d-1, n*47+8) + 8 },
		func(d, n int) uint64 { return recurse(d-1, n*49+9) + 9 },
		func(d, n int) uint64 { return recurse(d-1, n*51+10) + 10 },
		func(d, n int) uint64 { return recurse(d-1, n*53+11) + 11 },
		func(d, n int) uint64 { return recurse(d-1, n*55+12) + 12 },
		func(d, n int) uint64 { return recurse(d-1, n*57+13) + 13 },
		func(d, n int) uint64 { return recurse(d-1, n*59+14) + 14 },
		func(d, n int) uint64 { return recurse(d-1, n*61+15) + 15 },
	}
	leaves = []func(int) uint64{
		func(n int) uint64 { return spin(n%500+200) ^ 0 },
		func(n int) uint64 { return spin(n%537+213) ^ 1 },
		func(n int) uint64 { return spin(n%574+226) ^ 2 },
		func(n int) uint64 { return spin(n%611+239) ^ 3 },
		func(n int) uint64 { return spin(n%648+252) ^ 4 },
		func(n int) uint64 { return spin(n%685+265) ^ 5 },
		func(n int) uint64 { return spin(n%722+278) ^ 6 },
		func(n int) uint64 { return spin(n%759+291) ^ 7 },
	}
}

func recurse(depth, n int) uint64 {
	if n < 0 {
		n = -n
	}
	if depth <= 0 {
		return leaves[n%len(leaves)](n)
	}
	return steps[(n>>3)%len(steps)](depth, n)
}

var handlers = []string{"checkout", "search", "login", "cart", "browse", "pay", "ship", "admin"}

func work(d time.Duration, seed int64) {
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed + int64(g)))
			end := time.Now().Add(d)
			var acc uint64
			for time.Now().Before(end) {
				h := handlers[r.Intn(len(handlers))]
				pprof.Do(context.Background(), pprof.Labels("handler", h), func(context.Context) {
					for i := 0; i < 20; i++ {
						acc += recurse(4+r.Intn(11), r.Int())
					}
				})
			}
			if acc == 42 {
				fmt.Println(acc)
			}
		}(g)
	}
	wg.Wait()
}

func main() {
	out := flag.String("out", ".", "directory to write profiles into")
	n := flag.Int("n", 8, "number of CPU profiles")
	dur := flag.Duration("dur", time.Second, "duration of each CPU profile")
	hz := flag.Int("hz", 1000, "sampling rate")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; i < *n; i++ {
		runtime.SetCPUProfileRate(*hz)
		f, err := os.Create(filepath.Join(*out, fmt.Sprintf("cpu-%04d.pb.gz", i)))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// StartCPUProfile keeps the rate set above (and says so on stderr).
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		work(*dur, int64(i))
		pprof.StopCPUProfile()
		f.Close()
	}
}
