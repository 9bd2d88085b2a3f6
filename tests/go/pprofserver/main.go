// pprofserver: a Go program for profilefs's scraper tests and benchmark.
//
// Live mode (default): serves net/http/pprof on -addr while a workload burns
// CPU, allocates, contends on a mutex and blocks on channels, so cpu, heap,
// allocs, goroutine, mutex and block profiles all have samples.
//
// Replay mode (-replay DIR -ports FROM:N): listens on N consecutive ports and
// serves recorded profiles from DIR (cpu.pb.gz after sleeping ?seconds=N,
// heap-*.pb.gz in rotation, goroutine.pb.gz), as many services would, for the
// benchmark. Standard library only.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var sink [][]byte

func burn(stop <-chan struct{}) {
	var h [32]byte
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1000; i++ {
			h = sha256.Sum256(h[:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allocate() {
	ring := make([][]byte, 256)
	for i := 0; ; i++ {
		ring[i%len(ring)] = make([]byte, 1024+i%4096)
		if i%100 == 0 {
			sink = append(sink[:0], make([]byte, 64<<10))
			time.Sleep(2 * time.Millisecond)
		}
	}
}

func contend() {
	var mu sync.Mutex
	for g := 0; g < 4; g++ {
		go func() {
			for {
				mu.Lock()
				time.Sleep(100 * time.Microsecond)
				mu.Unlock()
				runtime.Gosched()
			}
		}()
	}
}

func block() {
	ch := make(chan int)
	go func() {
		for {
			time.Sleep(time.Millisecond)
			ch <- 1
		}
	}()
	go func() {
		for range ch {
		}
	}()
}

func live(addr string) {
	runtime.SetBlockProfileRate(10000)
	runtime.SetMutexProfileFraction(2)
	go burn(nil)
	go allocate()
	contend()
	block()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("pprofserver: serving net/http/pprof on %s", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}

type replay struct {
	cpu       []byte
	goroutine []byte
	heaps     [][]byte
	n         uint64
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	switch req.URL.Path {
	case "/debug/pprof/profile":
		secs, _ := strconv.Atoi(req.URL.Query().Get("seconds"))
		if secs <= 0 {
			secs = 30
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-req.Context().Done():
			return
		}
		w.Write(r.cpu)
	case "/debug/pprof/heap", "/debug/pprof/allocs":
		i := atomic.AddUint64(&r.n, 1)
		w.Write(r.heaps[int(i)%len(r.heaps)])
	case "/debug/pprof/goroutine":
		w.Write(r.goroutine)
	default:
		http.NotFound(w, req)
	}
}

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

func replayMode(dir, ports string) {
	parts := strings.SplitN(ports, ":", 2)
	from, err1 := strconv.Atoi(parts[0])
	n := 1
	var err2 error
	if len(parts) == 2 {
		n, err2 = strconv.Atoi(parts[1])
	}
	if err1 != nil || err2 != nil || n < 1 {
		log.Fatalf("-ports FROM:N, not %q", ports)
	}
	r := &replay{cpu: mustRead(filepath.Join(dir, "cpu.pb.gz")),
		goroutine: mustRead(filepath.Join(dir, "goroutine.pb.gz"))}
	heaps, _ := filepath.Glob(filepath.Join(dir, "heap-*.pb.gz"))
	sort.Strings(heaps)
	for _, h := range heaps {
		r.heaps = append(r.heaps, mustRead(h))
	}
	if len(r.heaps) == 0 {
		log.Fatal("no heap-*.pb.gz in ", dir)
	}
	for p := from; p < from+n; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			log.Fatal(err)
		}
		go http.Serve(ln, r)
	}
	log.Printf("pprofserver: replaying %s on 127.0.0.1:%d..%d", dir, from, from+n-1)
	select {}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6060", "listen address (live mode)")
	port := flag.Int("port", 0, "listen on 127.0.0.1:PORT (live mode; overrides -addr)")
	dir := flag.String("replay", "", "serve recorded profiles from DIR instead of live ones")
	ports := flag.String("ports", "", "replay mode: FROM:N, N ports from FROM")
	flag.Parse()
	if *dir != "" {
		replayMode(*dir, *ports)
		return
	}
	if *port != 0 {
		*addr = fmt.Sprintf("127.0.0.1:%d", *port)
	}
	live(*addr)
}
