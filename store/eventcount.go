package store

import "time"

// HourCount is how many events of one outcome happened in one hour.
// Suppressed marks the counter of the hour's failures that were counted
// but not stored (they are in their category's counter too).
type HourCount struct {
	Hour        time.Time
	Success     bool
	Suppressed  bool
	FailureCode string
	N           int64
}

// SuppressedCount is how many failures of one kind in one hour were
// counted but not stored as events. ProjectID is empty for failures that
// name no project.
type SuppressedCount struct {
	Hour        time.Time
	ProjectID   string
	Method      string
	Action      string
	FailureCode string
	N           int64
}
