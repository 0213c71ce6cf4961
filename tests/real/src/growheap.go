// A Go program whose heap grows: three heap profiles over time, each
// written twice, as profile.proto (PREFIX.000N.pb.gz) and as the legacy
// text of debug=1 (PREFIX.000N.heap).  MemProfileRate 1 records every
// allocation, so the figures are exact.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte

//go:noinline
func grow(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 4096))
	}
}

//go:noinline
func steady() []byte {
	return make([]byte, 1<<20)
}

func write(name string, debug int) {
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, debug); err != nil {
		panic(err)
	}
	f.Close()
}

func main() {
	runtime.MemProfileRate = 1
	prefix := os.Args[1]
	s := steady()
	for i := 1; i <= 3; i++ {
		grow(100)
		runtime.GC()
		write(fmt.Sprintf("%s.%04d.pb.gz", prefix, i), 0)
		write(fmt.Sprintf("%s.%04d.heap", prefix, i), 1)
	}
	runtime.KeepAlive(s)
}
