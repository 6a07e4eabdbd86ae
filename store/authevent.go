package store

import (
	"errors"
	"time"
)

// AuthEvent records one authentication outcome (a send, verify, login,
// enrolment or failure) for the events API and dashboard. ProjectID is
// empty for an event that names no project (an unknown magic-link token).
type AuthEvent struct {
	ID          string    `json:"id"`
	ProjectID   string    `json:"projectId"`
	UserID      string    `json:"userId"`
	Email       string    `json:"email"`
	Method      string    `json:"method"`
	Action      string    `json:"action"`
	Success     bool      `json:"success"`
	FailureCode string    `json:"failureCode"`
	IP          string    `json:"ip"`
	UserAgent   string    `json:"userAgent"`
	CreatedAt   time.Time `json:"createdAt"`
	// Pos is the event's place in time order; AddAuthEvent sets it and
	// reads return it.
	Pos EventPos `json:"-"`
}

// DefaultMaxEventsPerProject is how many authentication events a project
// keeps at most (Options.MaxEventsPerProject); past it the oldest go.
// Events that name no project count as one more project.
const DefaultMaxEventsPerProject = 1_000_000

// ErrBadEventField is returned by AddAuthEvent for a project id or
// failure code holding a NUL byte (the index separator).
var ErrBadEventField = errors.New("store: project id or failure code holds a NUL byte")

// AuthEventFilter selects events; empty fields match everything. A
// ProjectID selects that project's events; without one, events of every
// project and those that name none are listed.
type AuthEventFilter struct {
	ProjectID   string
	FailureCode string
	// Before, when set, lists only events older than that position (the
	// position of the last event of the previous page).
	Before EventPos
	// Limit is the page size; 0 lists every match (for tests and tools:
	// the admin pages always set one).
	Limit int
}
