package promtext

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// GoCollector gives the Go runtime's families as the Prometheus Go
// client's default Go collector names them (go_goroutines, go_threads,
// go_info, go_gc_*, go_memstats_*, go_sched_gomaxprocs_threads), read
// from runtime/metrics.
func GoCollector() Collector { return CollectorFunc(collectGo) }

// goSamples are the runtime/metrics samples the families are made of.
var goSamples = []string{
	"/memory/classes/heap/objects:bytes",          // 0
	"/gc/heap/allocs:bytes",                       // 1
	"/memory/classes/profiling/buckets:bytes",     // 2
	"/gc/heap/frees:objects",                      // 3
	"/gc/heap/tiny/allocs:objects",                // 4
	"/memory/classes/metadata/other:bytes",        // 5
	"/memory/classes/heap/released:bytes",         // 6
	"/memory/classes/heap/free:bytes",             // 7
	"/memory/classes/heap/unused:bytes",           // 8
	"/gc/heap/objects:objects",                    // 9
	"/gc/heap/allocs:objects",                     // 10
	"/memory/classes/metadata/mcache/inuse:bytes", // 11
	"/memory/classes/metadata/mcache/free:bytes",  // 12
	"/memory/classes/metadata/mspan/inuse:bytes",  // 13
	"/memory/classes/metadata/mspan/free:bytes",   // 14
	"/gc/heap/goal:bytes",                         // 15
	"/memory/classes/other:bytes",                 // 16
	"/memory/classes/heap/stacks:bytes",           // 17
	"/memory/classes/os-stacks:bytes",             // 18
	"/memory/classes/total:bytes",                 // 19
	"/gc/gogc:percent",                            // 20
	"/gc/gomemlimit:bytes",                        // 21
	"/sched/gomaxprocs:threads",                   // 22
}

func collectGo() []Family {
	s := make([]metrics.Sample, len(goSamples))
	for i, n := range goSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	v := func(i int) float64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return float64(s[i].Value.Uint64())
	}
	gs := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gs)
	quantiles := make([]Quantile, 5)
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		quantiles[i] = Quantile{q, gs.PauseQuantiles[i].Seconds()}
	}
	lastGC := 0.0
	if !gs.LastGC.IsZero() {
		lastGC = float64(gs.LastGC.UnixNano()) / 1e9
	}
	threads, _ := runtime.ThreadCreateProfile(nil)

	one := func(name, typ, help string, value float64) Family {
		return Family{Name: name, Help: help, Type: typ, Metrics: []Metric{{Value: value}}}
	}
	mem := func(name, typ, help string, value float64) Family {
		return one("go_memstats_"+name, typ, help, value)
	}
	return []Family{
		{Name: "go_gc_duration_seconds", Type: TypeSummary,
			Help:    "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
			Metrics: []Metric{{Quantiles: quantiles, Sum: gs.PauseTotal.Seconds(), Count: uint64(gs.NumGC)}}},
		one("go_gc_gogc_percent", TypeGauge, "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", v(20)),
		one("go_gc_gomemlimit_bytes", TypeGauge, "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", v(21)),
		one("go_goroutines", TypeGauge, "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		{Name: "go_info", Type: TypeGauge, Help: "Information about the Go environment.",
			Metrics: []Metric{{Labels: []Label{{"version", runtime.Version()}}, Value: 1}}},
		mem("alloc_bytes", TypeGauge, "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", v(0)),
		mem("alloc_bytes_total", TypeCounter, "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", v(1)),
		mem("buck_hash_sys_bytes", TypeGauge, "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", v(2)),
		mem("frees_total", TypeCounter, "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", v(3)+v(4)),
		mem("gc_sys_bytes", TypeGauge, "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", v(5)),
		mem("heap_alloc_bytes", TypeGauge, "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", v(0)),
		mem("heap_idle_bytes", TypeGauge, "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", v(6)+v(7)),
		mem("heap_inuse_bytes", TypeGauge, "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", v(0)+v(8)),
		mem("heap_objects", TypeGauge, "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", v(9)),
		mem("heap_released_bytes", TypeGauge, "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", v(6)),
		mem("heap_sys_bytes", TypeGauge, "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", v(0)+v(8)+v(6)+v(7)),
		mem("last_gc_time_seconds", TypeGauge, "Number of seconds since 1970 of last garbage collection.", lastGC),
		mem("mallocs_total", TypeCounter, "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", v(10)+v(4)),
		mem("mcache_inuse_bytes", TypeGauge, "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", v(11)),
		mem("mcache_sys_bytes", TypeGauge, "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", v(11)+v(12)),
		mem("mspan_inuse_bytes", TypeGauge, "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", v(13)),
		mem("mspan_sys_bytes", TypeGauge, "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", v(13)+v(14)),
		mem("next_gc_bytes", TypeGauge, "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", v(15)),
		mem("other_sys_bytes", TypeGauge, "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", v(16)),
		mem("stack_inuse_bytes", TypeGauge, "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", v(17)),
		mem("stack_sys_bytes", TypeGauge, "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", v(17)+v(18)),
		mem("sys_bytes", TypeGauge, "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", v(19)),
		one("go_sched_gomaxprocs_threads", TypeGauge, "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", v(22)),
		one("go_threads", TypeGauge, "Number of OS threads created.", float64(threads)),
	}
}
