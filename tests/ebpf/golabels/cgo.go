//go:build cgotest

// Built with -tags cgotest, the program links libc through cgo: Go's g then
// lives in the C library's TLS block, at an offset the linker chose.
package main

// int golabels_c_answer(void) { return 42; }
import "C"

func init() {
	if C.golabels_c_answer() != 42 {
		panic("cgo")
	}
}
