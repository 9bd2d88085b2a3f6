// spanapp serves "requests" under pprof.Do(ctx, pprof.Labels("span_id", id,
// "span_name", name)) as Pyroscope's span profiles mark them (otel-profiling-go),
// each request burning a known share of the CPU, and writes its own Go CPU
// profile and the share of CPU time each span took (measured by the program
// itself, per thread CPU clock) for the span profile tests.
//
//	spanapp -out cpu.pb.gz -shares shares.txt -dur 3s [-spans 4] [-weights 16,2]
//	        [-push URL [-token FILE]] [-hz 250]
//
// shares.txt: one line per span, "<span_id> <name> <cpu ns>", then
// "untagged <cpu ns>" and "total <cpu ns>". With -push the profile is also
// POSTed to URL (Pyroscope's /ingest, format=pprof).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

//go:noinline
func spinA(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func spinB(n int) uint64 { return spinA(n) ^ 1 }

//go:noinline
func spinC(n int) uint64 { return spinA(n) ^ 2 }

//go:noinline
func spinD(n int) uint64 { return spinA(n) ^ 3 }

var work = []func(int) uint64{spinA, spinB, spinC, spinD}

// threadCPU: this thread's CPU time (the goroutine is locked to it).
func threadCPU() int64 {
	var ts syscall.Timespec
	// CLOCK_THREAD_CPUTIME_ID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

func main() {
	out := flag.String("out", "cpu.pb.gz", "the CPU profile written")
	sharesOut := flag.String("shares", "shares.txt", "the measured CPU per span")
	dur := flag.Duration("dur", 3*time.Second, "how long to serve")
	nspans := flag.Int("spans", 4, "distinct spans (request ids), each with its own weight")
	push := flag.String("push", "", "POST the profile to this URL too")
	hz := flag.Int("hz", 250, "sampling rate (Linux delivers at most its tick rate)")
	token := flag.String("token", "", "a file holding the bearer token of the push")
	weights := flag.String("weights", "", "comma-separated weights of the spans (default 1,2,3,...)")
	flag.Parse()

	type span struct {
		id, name string
		weight   int
		cpu      int64
	}
	spans := make([]*span, *nspans)
	for i := range spans {
		spans[i] = &span{id: fmt.Sprintf("%016x", uint64(0x5a5a000000000000)+uint64(i+1)*0x1111),
			name: fmt.Sprintf("GET /r%d", i), weight: i + 1}
	}
	if *weights != "" {
		for i, w := range strings.Split(*weights, ",") {
			if i < len(spans) {
				spans[i].weight, _ = strconv.Atoi(w)
			}
		}
	}
	// One goroutine, one thread: CPU measured per request is the program's own share.
	runtime.LockOSThread()
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// 1000 Hz (pprof.StartCPUProfile keeps a rate set before it, with a
	// warning): enough samples in a short run for shares within a few percent.
	runtime.SetCPUProfileRate(*hz)
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	var untagged, total int64
	t0 := threadCPU()
	for k := 0; time.Since(start) < *dur; k++ {
		// A cycle: each span runs `weight` requests of ~2 ms, then one untagged.
		for _, s := range spans {
			for w := 0; w < s.weight; w++ {
				s := s
				a := threadCPU()
				pprof.Do(context.Background(), pprof.Labels("span_id", s.id, "span_name", s.name),
					func(ctx context.Context) {
						sink += work[k%len(work)](400000)
					})
				s.cpu += threadCPU() - a
			}
		}
		a := threadCPU()
		sink += spinD(400000)
		untagged += threadCPU() - a
	}
	total = threadCPU() - t0
	pprof.StopCPUProfile()
	f.Close()

	var b bytes.Buffer
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %q %d\n", s.id, s.name, s.cpu)
	}
	fmt.Fprintf(&b, "untagged %d\ntotal %d\n", untagged, total)
	if err := os.WriteFile(*sharesOut, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *push != "" {
		body, err := os.ReadFile(*out)
		if err == nil {
			var resp *http.Response
			req, _ := http.NewRequest("POST", *push, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/octet-stream")
			if *token != "" {
				t, _ := os.ReadFile(*token)
				req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(t)))
			}
			resp, err = http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("push: %s", resp.Status)
				}
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("spanapp: %d spans, total cpu %d ns, sink %d\n", len(spans), total, sink&1)
}
