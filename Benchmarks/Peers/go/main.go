// The Go peer of precise-bench's `peers` section: the same work, with the same seeded draws, as
// the PreciseTimer, libevent and tokio rows (see Benchmarks/README.md, "Peers"). Standard library
// only, so it builds offline.
//
//	precise-peer-go cost <fifo|random> <pending> <pairs> <touches> <seed>
//	precise-peer-go storm <count>
//	precise-peer-go lateness <ticks> <interval-ns>
//
// Prints one JSON line: {"figures":{...},"samples":[...]} (nanoseconds, bytes). Timers are
// time.AfterFunc (cancelled with Stop, pushed later with Reset); the repeating timer is one
// time.Timer re-armed with Reset at absolute deadlines start + k·interval.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe" // go:linkname, and the CPU mask's address
)

// nanotime is the runtime's CLOCK_MONOTONIC read (vDSO), the clock every other row reads.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// nowNs reads CLOCK_MONOTONIC in nanoseconds, as every other row does.
func nowNs() int64 { return nanotime() }

func processCPUNs() int64 {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return (usage.Utime.Sec+usage.Stime.Sec)*1_000_000_000 + (usage.Utime.Usec+usage.Stime.Usec)*1_000
}

func residentBytes() int64 {
	text, _ := os.ReadFile("/proc/self/statm")
	fields := strings.Fields(string(text))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// splitMix64 is the seeded generator every language of the section implements identically.
type splitMix64 struct{ state uint64 }

func (g *splitMix64) next() uint64 {
	g.state += 0x9E3779B97F4A7C15
	z := g.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

type draws struct {
	delaysMs []uint64
	victims  []int
	touches  []int
	check    uint64
}

// makeDraws draws every timer's delay (an hour plus 0–60 s, whole milliseconds), the victims of
// the pairs and the timers the touch pushes later; check folds them all.
func makeDraws(order string, pending, pairs, touches int, seed uint64) draws {
	g := splitMix64{seed}
	d := draws{delaysMs: make([]uint64, pending+pairs)}
	for i := range d.delaysMs {
		d.delaysMs[i] = 3_600_000 + g.next()%60_000
	}
	permutation := make([]int, pending)
	for i := range permutation {
		permutation[i] = i
	}
	for i := pending - 1; i >= 1; i-- {
		j := int(g.next() % uint64(i+1))
		permutation[i], permutation[j] = permutation[j], permutation[i]
	}
	if order == "fifo" {
		d.victims = make([]int, pairs)
		for k := range d.victims {
			d.victims[k] = k
		}
	} else {
		d.victims = append([]int(nil), permutation[:pairs]...)
	}
	d.touches = append([]int(nil), permutation[pairs:pairs+touches]...)
	var check uint64
	for _, v := range d.delaysMs {
		check = check*31 + v
	}
	for _, v := range d.victims {
		check = check*31 + uint64(v)
	}
	for _, v := range d.touches {
		check = check*31 + uint64(v)
	}
	d.check = check % 1_000_000_007
	return d
}

func printResult(figures map[string]float64, samples []int64) {
	if samples == nil {
		samples = []int64{}
	}
	out, _ := json.Marshal(struct {
		Figures map[string]float64 `json:"figures"`
		Samples []int64            `json:"samples"`
	}{figures, samples})
	fmt.Println(string(out))
	os.Exit(0)
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "precise-peer-go:", message)
	os.Exit(1)
}

func intArg(index int) int {
	if index >= len(os.Args) {
		fail("missing argument")
	}
	value, err := strconv.Atoi(os.Args[index])
	if err != nil {
		fail(err.Error())
	}
	return value
}

var fired atomic.Int64

func handler() { fired.Add(1) }

func cost(order string, pending, pairs, touches int, seed uint64) {
	d := makeDraws(order, pending, pairs, touches, seed)
	timers := make([]*time.Timer, pending+pairs)
	for i := range timers {
		timers[i] = nil // touch the pages before the baseline: the caller's array is not the runtime's
	}
	rss0, cpu0, t0 := residentBytes(), processCPUNs(), nowNs()
	for i := 0; i < pending; i++ {
		timers[i] = time.AfterFunc(time.Duration(d.delaysMs[i])*time.Millisecond, handler)
	}
	fillWall, fillCPU := nowNs()-t0, processCPUNs()-cpu0
	bytes := float64(residentBytes()-rss0) / float64(pending)

	cpu1, t1 := processCPUNs(), nowNs()
	for k := 0; k < pairs; k++ {
		timers[pending+k] = time.AfterFunc(time.Duration(d.delaysMs[pending+k])*time.Millisecond, handler)
		if !timers[d.victims[k]].Stop() {
			fail("a victim was not pending")
		}
		timers[d.victims[k]] = nil
	}
	wall, cpu := nowNs()-t1, processCPUNs()-cpu1
	figures := map[string]float64{
		"fill":    float64(fillWall) / float64(pending),
		"fillCpu": float64(fillCPU) / float64(pending),
		"bytes":   bytes,
		"wall":    float64(wall) / float64(pairs),
		"cpu":     float64(cpu) / float64(pairs),
		"check":   float64(d.check),
	}
	if touches > 0 {
		cpu2, t2 := processCPUNs(), nowNs()
		for _, t := range d.touches {
			if !timers[t].Reset(time.Duration(d.delaysMs[t]+3_600_000) * time.Millisecond) {
				fail("a touched timer was not pending")
			}
		}
		wall, cpu := nowNs()-t2, processCPUNs()-cpu2
		figures["touchWall"] = float64(wall) / float64(touches)
		figures["touchCpu"] = float64(cpu) / float64(touches)
	}
	if fired.Load() != 0 {
		fail("a timer fired during the measurement")
	}
	printResult(figures, nil)
}

func storm(count int) {
	var first, last atomic.Int64
	done := make(chan struct{})
	deadline := nowNs() + 2_000_000_000
	fire := func() {
		n := fired.Add(1)
		now := nowNs()
		if n == 1 {
			first.Store(now)
		}
		if n == int64(count) {
			last.Store(now)
			close(done)
		}
	}
	for i := 0; i < count; i++ {
		time.AfterFunc(time.Duration(deadline-nowNs()), fire)
	}
	overrun := nowNs() - deadline
	<-done
	printResult(map[string]float64{
		"first": float64(first.Load() - deadline), "last": float64(last.Load() - deadline), "overrun": float64(overrun),
	}, nil)
}

func lateness(ticks int, interval int64) {
	samples := make([]int64, 0, ticks)
	cpu0 := processCPUNs()
	start := nowNs()
	timer := time.NewTimer(time.Duration(interval))
	for k := int64(1); k <= int64(ticks); k++ {
		<-timer.C
		deadline := start + k*interval
		now := nowNs()
		samples = append(samples, now-deadline)
		timer.Reset(time.Duration(deadline + interval - nowNs()))
	}
	printResult(map[string]float64{"cpu": float64(processCPUNs()-cpu0) / float64(ticks)}, samples)
}

// pinFromEnvironment pins the thread that makes the measured calls, and only it, to the CPU in
// PRECISE_BENCH_CPU, as precise-bench pins every column's measuring thread in a cost round. The
// main goroutine is locked to its thread first; threads the runtime starts from then on come
// from its template thread, unpinned, so the collector still runs where the system puts it.
func pinFromEnvironment() {
	value, ok := os.LookupEnv("PRECISE_BENCH_CPU")
	if !ok {
		return
	}
	cpu, err := strconv.Atoi(value)
	if err != nil || cpu < 0 || cpu >= 1024 {
		fail("PRECISE_BENCH_CPU=" + value + " is not a CPU number")
	}
	runtime.LockOSThread()
	var mask [16]uint64 // a cpu_set_t: 1024 bits
	mask[cpu/64] |= 1 << (uint(cpu) % 64)
	_, _, errno := syscall.RawSyscall(
		syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if errno != 0 {
		fail("cannot pin to CPU " + value + ": " + errno.Error())
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: precise-peer-go cost|storm|lateness ...")
	}
	switch os.Args[1] {
	case "cost":
		if len(os.Args) < 7 {
			fail("usage: precise-peer-go cost <fifo|random> <pending> <pairs> <touches> <seed>")
		}
		order := os.Args[2]
		pending, pairs, touches := intArg(3), intArg(4), intArg(5)
		seed, err := strconv.ParseUint(os.Args[6], 10, 64)
		if err != nil || pairs+touches > pending || (order != "fifo" && order != "random") {
			fail("pairs + touches must not exceed pending; order is fifo or random")
		}
		pinFromEnvironment()
		cost(order, pending, pairs, touches, seed)
	case "storm":
		storm(intArg(2))
	case "lateness":
		lateness(intArg(2), int64(intArg(3)))
	}
	fail("unknown work " + os.Args[1])
}
