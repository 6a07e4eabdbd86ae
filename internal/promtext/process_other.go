//go:build !linux

package promtext

import "time"

// started stands for the process's start: when this package was
// initialised, at the start of the program.
var started = float64(time.Now().UnixNano()) / 1e9

// ProcessCollector gives the process's start time; the other process_*
// families are read from /proc, on Linux only.
func ProcessCollector() Collector {
	return CollectorFunc(func() []Family {
		return []Family{{Name: "process_start_time_seconds", Type: TypeGauge,
			Help: "Start time of the process since unix epoch in seconds.", Metrics: []Metric{{Value: started}}}}
	})
}
