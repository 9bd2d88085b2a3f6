// genprof writes real Go profiles (runtime/pprof) for the tests and
// benchmarks: N CPU profiles of a workload with many distinct stacks, and
// heap / allocs / goroutine / block / mutex profiles of the same process.
package main

import (
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

var sink []byte
var sinkMu sync.Mutex

//go:noinline
func leafHash(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func parseRecords(n int) uint64 { return leafHash(n) + leafHash(n/3) }

//go:noinline
func compress(n int) uint64 { return leafHash(n * 2) }

//go:noinline
func encodeJSON(n int) uint64 {
	b := make([]byte, 256+n%1024)
	sinkMu.Lock()
	sink = b
	sinkMu.Unlock()
	return leafHash(n)
}

// Four interchangeable steps: each level of the recursion picks one, so
// profiles hold many distinct stacks, as real services' do.
//
//go:noinline
func stepValidate(depth, n int) uint64 { return recurse(depth-1, n) + 1 }

//go:noinline
func stepTransform(depth, n int) uint64 { return recurse(depth-1, n) + 2 }

//go:noinline
func stepLookup(depth, n int) uint64 { return recurse(depth-1, n) + 3 }

//go:noinline
func stepRender(depth, n int) uint64 { return recurse(depth-1, n) + 4 }

//go:noinline
func recurse(depth, n int) uint64 {
	if depth <= 0 {
		switch n % 4 {
		case 0:
			return parseRecords(n)
		case 1:
			return compress(n)
		case 2:
			return encodeJSON(n)
		default:
			return leafHash(n)
		}
	}
	switch (n >> uint(depth)) % 4 {
	case 0:
		return stepValidate(depth, n)
	case 1:
		return stepTransform(depth, n)
	case 2:
		return stepLookup(depth, n)
	default:
		return stepRender(depth, n)
	}
}

//go:noinline
func handleCheckout(r *rand.Rand) uint64 { return recurse(r.Intn(12), 2000+r.Intn(6000)) }

//go:noinline
func handleSearch(r *rand.Rand) uint64 { return recurse(r.Intn(8), 1000+r.Intn(3000)) + compress(500) }

//go:noinline
func handleLogin(r *rand.Rand) uint64 { return parseRecords(3000 + r.Intn(2000)) }

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
				switch r.Intn(3) {
				case 0:
					acc += handleCheckout(r)
				case 1:
					acc += handleSearch(r)
				default:
					acc += handleLogin(r)
				}
			}
			if acc == 42 {
				fmt.Println(acc)
			}
		}(g)
	}
	wg.Wait()
}

func write(path string, f func(*os.File) error) {
	out, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out.Close()
}

func main() {
	out := flag.String("out", ".", "directory to write profiles into")
	n := flag.Int("n", 3, "number of CPU profiles")
	dur := flag.Duration("dur", 200*time.Millisecond, "duration of each CPU profile")
	other := flag.Bool("other", true, "also write heap, allocs, goroutine, block, mutex")
	seed := flag.Int64("seed", 1, "workload seed")
	hz := flag.Int("hz", 100, "CPU sampling rate (Go's default is 100)")
	flag.Parse()
	os.MkdirAll(*out, 0755)
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	for i := 0; i < *n; i++ {
		write(filepath.Join(*out, fmt.Sprintf("cpu-%04d.pb.gz", i)), func(f *os.File) error {
			if *hz != 100 {
				// Known idiom: a rate set first survives StartCPUProfile
				// (which then prints a harmless warning).
				runtime.SetCPUProfileRate(*hz)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			work(*dur, *seed+int64(i)*7)
			pprof.StopCPUProfile()
			return nil
		})
	}
	if !*other {
		return
	}
	runtime.GC()
	for _, name := range []string{"heap", "allocs", "goroutine", "block", "mutex"} {
		name := name
		write(filepath.Join(*out, name+".pb.gz"), func(f *os.File) error {
			return pprof.Lookup(name).WriteTo(f, 0)
		})
	}
}
