package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkFootprint measures what the README's benchmarks give for the
// small machine: the stripped binary's size (built as .ci/release builds
// it, for this machine), then seven starts on a small data file (made by
// a first start that is not counted): the time from the process's start
// to its "listening" log line, the CPU time its threads had used by then
// (user and system, from /proc/<pid>/task/*/schedstat: on a busy machine
// the wall clock measures queueing, the CPU does not), and its resident
// memory (VmRSS) after two idle seconds; medians and ranges. With LATCHKEY_POCKETBASE set to a
// PocketBase binary, the same for PocketBase in the same run (`serve` on
// an empty data directory made by a first start, until "Server started").
// LATCHKEY_FOOTPRINT_BINARY measures that latchkey binary instead of
// building one (an older build, to compare). It runs on demand, not in
// the test command:
//
//	go test -run '^$' -bench Footprint -benchtime 1x .
//	LATCHKEY_POCKETBASE=$HOME/go/bin/base go test -run '^$' -bench Footprint -benchtime 1x .
func BenchmarkFootprint(b *testing.B) {
	dir := b.TempDir()
	bin := os.Getenv("LATCHKEY_FOOTPRINT_BINARY")
	if bin == "" {
		bin = filepath.Join(dir, "latchkey")
		build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	data := filepath.Join(dir, "latchkey.db")
	footprint(b, "latchkey", bin, func(addr string) []string {
		return []string{"serve", "--data", data, "--addr", addr}
	}, "latchkey listening")
	if pb := os.Getenv("LATCHKEY_POCKETBASE"); pb != "" {
		pbDir := filepath.Join(dir, "pb_data")
		footprint(b, "pocketbase", pb, func(addr string) []string {
			return []string{"serve", "--dir", pbDir, "--http", addr}
		}, "Server started")
	}
}

// footprint reports a binary's size, start time and idle RSS (see
// BenchmarkFootprint).
func footprint(b *testing.B, name, bin string, args func(addr string) []string, ready string) {
	st, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	var starts, cpus []time.Duration
	var rss []int64
	for i := range 8 {
		took, cpu, kB := startOnce(b, bin, args(freeAddr(b)), ready)
		if i == 0 {
			continue // the first start makes the data
		}
		starts, cpus, rss = append(starts, took), append(cpus, cpu), append(rss, kB)
	}
	slices.Sort(starts)
	slices.Sort(cpus)
	slices.Sort(rss)
	n := len(starts)
	b.Logf("%s: binary %.2f MB; start to listening %.1f ms median (%.1f–%.1f), CPU %.1f ms median (%.1f–%.1f); idle RSS %.2f MB median (%.2f–%.2f)",
		name, float64(st.Size())/1e6, ms(starts[n/2]), ms(starts[0]), ms(starts[n-1]),
		ms(cpus[n/2]), ms(cpus[0]), ms(cpus[n-1]),
		float64(rss[n/2])/1000, float64(rss[0])/1000, float64(rss[n-1])/1000)
	b.ReportMetric(float64(st.Size())/1e6, name+"-MB")
	b.ReportMetric(ms(starts[n/2]), name+"-start-ms")
	b.ReportMetric(ms(cpus[n/2]), name+"-start-CPU-ms")
	b.ReportMetric(float64(rss[n/2])/1000, name+"-idle-RSS-MB")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// freeAddr is a loopback address with a port free now.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startOnce starts bin, waits for ready on its output, reads the CPU
// time its threads have used, waits two idle seconds, reads its VmRSS
// (kB) and stops it.
func startOnce(b *testing.B, bin string, args []string, ready string) (took, cpu time.Duration, kB int64) {
	cmd := exec.Command(bin, args...)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait(); w.Close() }()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), ready) {
			took = time.Since(start)
			cpu = cpuTime(cmd.Process.Pid)
			break
		}
	}
	go io.Copy(io.Discard, r)
	if took == 0 {
		b.Fatalf("%s never said %q", bin, ready)
	}
	time.Sleep(2 * time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kB)
		}
	}
	return took, cpu, kB
}

// cpuTime is the CPU time the threads of process pid have used: the
// first field of each /proc/<pid>/task/<tid>/schedstat, in nanoseconds.
func cpuTime(pid int) time.Duration {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that has just ended
		}
		var ns int64
		fmt.Sscan(string(raw), &ns)
		sum += time.Duration(ns)
	}
	return sum
}
