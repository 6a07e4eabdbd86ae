package auth

import (
	"context"
	"slices"
	"strings"
	"time"

	"latchkey/store"
)

// Page sizes of the admin lists (events, users).
const (
	DefaultPageSize = 100
	// MaxPageSize is the largest page; no admin page loads more rows.
	MaxPageSize = 1000
)

// pageSize is limit, defaulted and capped.
func pageSize(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageSize
	case limit > MaxPageSize:
		return MaxPageSize
	}
	return limit
}

// FailureCategories are the failure categories events record (the
// contract's table), in the order the dashboard shows them.
var FailureCategories = []string{CatInvalidCode, CatExpired, CatAlreadyUsed, CatRateLimited,
	CatUserNotFound, CatUserDisabled, CatUserExists, CatValidation, CatRiskBlocked,
	CatExternalMethod, CatInternal}

// EventView is an authentication event as the admin API shows it.
// ProjectID is null for an event that names no project (an unknown
// magic-link token).
type EventView struct {
	ID          string  `json:"id"`
	ProjectID   *string `json:"projectId"`
	UserID      *string `json:"userId"`
	Email       *string `json:"email"`
	Method      string  `json:"method"`
	Action      string  `json:"action"`
	Success     bool    `json:"success"`
	FailureCode *string `json:"failureCode"`
	IP          string  `json:"ip"`
	UserAgent   string  `json:"userAgent"`
	CreatedAt   string  `json:"createdAt"`
}

// SuppressedView is how many failures of one kind in one hour were
// counted but not stored (suppress.go). Hour is the hour's start, RFC
// 3339 UTC.
type SuppressedView struct {
	Hour        string  `json:"hour"`
	ProjectID   *string `json:"projectId"`
	Method      string  `json:"method"`
	Action      string  `json:"action"`
	FailureCode string  `json:"failureCode"`
	Count       int64   `json:"count"`
}

// suppressedRows bounds the suppressed counters a page of events reads
// (its newest hours): with the page's events and the chart's counters, a
// dashboard page reads under 1,000 rows.
const suppressedRows = 500

// EventQuery selects a page of events. Empty fields match everything.
type EventQuery struct {
	ProjectID   string
	FailureCode string
	// Before is the NextCursor of the previous page, or an RFC 3339 time:
	// the page holds only older events.
	Before string
	// Limit is the page size: default 100, at most MaxPageSize.
	Limit int
}

// EventPage is a page of events, newest first. NextCursor, passed as
// Before, gives the next (older) page; it is nil on the last one.
// Suppressed lists the failures counted but not stored in the hours the
// page spans (from its oldest event's hour, or the start of retention on
// the last page, to its newest: the hour of Before, or now), newest hour
// first, under the same filters; at most suppressedRows of them, the
// newest.
type EventPage struct {
	Events     []EventView
	NextCursor *string
	Suppressed []SuppressedView
}

// Events returns a page of authentication events. Every filter walks an
// index: a page costs about its own rows whatever the number of events.
// 400 VALIDATION_ERROR for an unknown failureCode or a bad before.
func (s *Service) Events(ctx context.Context, q EventQuery) (EventPage, error) {
	if q.FailureCode != "" && !slices.Contains(FailureCategories, q.FailureCode) {
		return EventPage{}, Invalid("failureCode must be one of %s.", strings.Join(FailureCategories, ", "))
	}
	now := s.now().UTC()
	f := store.AuthEventFilter{ProjectID: q.ProjectID, FailureCode: q.FailureCode, Limit: pageSize(q.Limit)}
	upper := now
	if q.Before != "" {
		if pos, err := store.ParseEventPos(q.Before); err == nil {
			f.Before = pos
		} else if t, err := time.Parse(time.RFC3339Nano, q.Before); err == nil {
			f.Before = store.PosBefore(t)
		} else {
			return EventPage{}, Invalid("before must be the nextCursor of the previous page or an RFC 3339 time.")
		}
		upper = time.Unix(0, f.Before.Nanos).UTC()
	}
	page := EventPage{Events: []EventView{}, Suppressed: []SuppressedView{}}
	var rows []store.SuppressedCount
	err := s.db.View(ctx, func(tx store.Tx) error {
		evs, more, err := tx.AuthEvents(f)
		if err != nil {
			return err
		}
		lower := now.Add(-EventRetention)
		if more {
			last := evs[len(evs)-1]
			c := last.Pos.String()
			page.NextCursor = &c
			lower = last.CreatedAt
		}
		for _, e := range evs {
			page.Events = append(page.Events, viewEvent(e))
		}
		if lower.After(upper) {
			return nil
		}
		rows, err = tx.SuppressedCounts(q.ProjectID, q.FailureCode, lower, upper, suppressedRows)
		rows = append(rows, s.suppress.pendingRows(q.ProjectID, q.FailureCode, lower, upper)...)
		return err
	})
	if err != nil {
		return EventPage{}, internal(err)
	}
	page.Suppressed = viewSuppressed(rows)
	return page, nil
}

func viewEvent(e *store.AuthEvent) EventView {
	return EventView{ID: e.ID, ProjectID: nullable(e.ProjectID), UserID: nullable(e.UserID), Email: nullable(e.Email),
		Method: e.Method, Action: e.Action, Success: e.Success, FailureCode: nullable(e.FailureCode),
		IP: e.IP, UserAgent: e.UserAgent, CreatedAt: formatTime(e.CreatedAt)}
}

// viewSuppressed sums rows of the same hour and kind (stored and still in
// memory), newest hour first.
func viewSuppressed(rows []store.SuppressedCount) []SuppressedView {
	type key struct {
		hour                             time.Time
		project, method, action, failure string
	}
	sums := map[key]int64{}
	var order []key
	for _, r := range rows {
		k := key{r.Hour, r.ProjectID, r.Method, r.Action, r.FailureCode}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += r.N
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if c := b.hour.Compare(a.hour); c != 0 {
			return c
		}
		return strings.Compare(a.project+"\x00"+a.method+"\x00"+a.action+"\x00"+a.failure, b.project+"\x00"+b.method+"\x00"+b.action+"\x00"+b.failure)
	})
	out := make([]SuppressedView, 0, len(order))
	for _, k := range order {
		out = append(out, SuppressedView{Hour: k.hour.Format(time.RFC3339), ProjectID: nullable(k.project), Method: k.method,
			Action: k.action, FailureCode: k.failure, Count: sums[k]})
	}
	return out
}

// FailureHours is failures per hour and category over a day, for the
// dashboard's chart. Counts[h] holds the hour that starts at
// Start+h hours; suppressed failures are counted in their category, and
// Suppressed is how many of them were counted but not stored.
type FailureHours struct {
	Start      time.Time
	Counts     [24]map[string]int64
	Suppressed int64
}

// FailureChart returns the failures of the 24 hours up to now (the
// current hour included) of projectID, or of every project when it is
// empty. It reads the hourly counters only: at most 24 rows per category
// (and one per hour for the suppressed total).
func (s *Service) FailureChart(ctx context.Context, projectID string) (FailureHours, error) {
	now := s.now().UTC()
	out := FailureHours{Start: now.Truncate(time.Hour).Add(-23 * time.Hour)}
	err := s.db.View(ctx, func(tx store.Tx) error {
		counts, err := tx.HourlyCounts(projectID, out.Start, now)
		if err != nil {
			return err
		}
		for _, c := range counts {
			h := int(c.Hour.Sub(out.Start) / time.Hour)
			switch {
			case c.Success || h < 0 || h > 23:
			case c.Suppressed:
				out.Suppressed += c.N
			default:
				if out.Counts[h] == nil {
					out.Counts[h] = map[string]int64{}
				}
				out.Counts[h][c.FailureCode] += c.N
			}
		}
		return nil
	})
	if err != nil {
		return FailureHours{}, internal(err)
	}
	// Counts still in memory are in neither the hourly counters nor the
	// suppressed ones yet.
	for _, r := range s.suppress.pendingRows(projectID, "", out.Start, now) {
		out.Suppressed += r.N
		if h := int(r.Hour.Sub(out.Start) / time.Hour); h >= 0 && h <= 23 {
			if out.Counts[h] == nil {
				out.Counts[h] = map[string]int64{}
			}
			out.Counts[h][r.FailureCode] += r.N
		}
	}
	return out, nil
}
