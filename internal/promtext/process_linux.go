package promtext

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"
)

// ProcessCollector gives the process's families as the Prometheus Go
// client's process collector names them, read from /proc: CPU time,
// file descriptors open and allowed, network bytes, resident and virtual
// memory, start time. A family whose file cannot be read is left out.
func ProcessCollector() Collector { return CollectorFunc(collectProcess) }

// userHZ is the kernel's clock tick for /proc/*/stat times (USER_HZ).
const userHZ = 100

func collectProcess() []Family {
	var fams []Family
	add := func(name, typ, help string, v float64) {
		fams = append(fams, Family{Name: name, Help: help, Type: typ, Metrics: []Metric{{Value: v}}})
	}
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The fields after the command's closing parenthesis, from
		// the state (field 3): utime 14, stime 15, starttime 22,
		// vsize 23, rss 24.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			num := func(field int) float64 {
				if field-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[field-3], 64)
				return v
			}
			add("process_cpu_seconds_total", TypeCounter, "Total user and system CPU time spent in seconds.", (num(14)+num(15))/userHZ)
			add("process_resident_memory_bytes", TypeGauge, "Resident memory size in bytes.", num(24)*float64(os.Getpagesize()))
			if boot, ok := bootTime(); ok {
				add("process_start_time_seconds", TypeGauge, "Start time of the process since unix epoch in seconds.", boot+num(22)/userHZ)
			}
			add("process_virtual_memory_bytes", TypeGauge, "Virtual memory size in bytes.", num(23))
		}
	}
	if limits, err := os.ReadFile("/proc/self/limits"); err == nil {
		if v, ok := softLimit(string(limits), "Max open files"); ok {
			add("process_max_fds", TypeGauge, "Maximum number of open file descriptors.", v)
		}
		if v, ok := softLimit(string(limits), "Max address space"); ok {
			add("process_virtual_memory_max_bytes", TypeGauge, "Maximum amount of virtual memory available in bytes.", v)
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		add("process_open_fds", TypeGauge, "Number of open file descriptors.", float64(len(fds)))
	}
	if netstat, err := os.ReadFile("/proc/self/net/netstat"); err == nil {
		in, out, ok := ipOctets(string(netstat))
		if ok {
			add("process_network_receive_bytes_total", TypeCounter, "Number of bytes received by the process over the network.", in)
			add("process_network_transmit_bytes_total", TypeCounter, "Number of bytes sent by the process over the network.", out)
		}
	}
	return fams
}

// bootTime is the btime line of /proc/stat: when the system booted, in
// seconds since the epoch.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// softLimit reads a soft limit from /proc/self/limits ("unlimited" is
// the largest 64-bit count).
func softLimit(limits, name string) (float64, bool) {
	for line := range strings.Lines(limits) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		if f[0] == "unlimited" {
			return math.MaxUint64, true
		}
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	return 0, false
}

// ipOctets reads InOctets and OutOctets from the IpExt lines of
// /proc/self/net/netstat (a line of names, then a line of values).
func ipOctets(netstat string) (in, out float64, ok bool) {
	var names []string
	found := 0
	for line := range strings.Lines(netstat) {
		rest, isIP := strings.CutPrefix(line, "IpExt:")
		if !isIP {
			continue
		}
		if names == nil {
			names = strings.Fields(rest)
			continue
		}
		for i, v := range strings.Fields(rest) {
			if i >= len(names) {
				break
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			switch names[i] {
			case "InOctets":
				in, found = n, found+1
			case "OutOctets":
				out, found = n, found+1
			}
		}
		break
	}
	return in, out, found == 2
}
