package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// ReadyCheck is one condition of readiness beyond the store and the
// scheduler, which GET /api/v1/ready always checks: a required provider
// (mail whose configuration fails, say).
type ReadyCheck struct {
	// Name names the component in the not-ready message ("mail").
	Name string
	// Check returns nil while the component is usable. It is called on
	// every GET /ready, so it must be cheap and must not block; its
	// error text is shown to anyone who asks, so it must hold no secret.
	Check func() error
	// Detail, when set, returns the failure in full (the server's own
	// words, say) while Check fails. Only the dashboard shows it, to the
	// signed-in operator; it must hold no secret either.
	Detail func() error
	// Degrades makes a failure of Check degrade the server rather than
	// make it not ready: GET /ready still answers 200, with status
	// "degraded" and the failure listed in degraded (off-site backups
	// failing, say: the server serves, but someone should look).
	Degrades bool
}

// readiness answers GET /api/v1/ready (no auth): 200 {success, status:
// "ready"} when the store is usable, the scheduler runs and every
// configured check passes; 200 {success, status: "degraded", degraded:
// [...]} when only checks that degrade fail (each "name: reason"); else
// 503 NOT_READY naming each part that fails. GET /health stays liveness:
// it does not look at any of these.
func (s *Server) readiness(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if failing := s.notReady(r.Context(), false); len(failing) > 0 {
		parts := make([]string, len(failing))
		for i, f := range failing {
			parts[i] = f.String()
		}
		return auth.ErrNotReady.With("Not ready: " + strings.Join(parts, "; ") + ".")
	}
	if degraded := s.degraded(); len(degraded) > 0 {
		return ok(w, struct {
			Success  bool     `json:"success"`
			Status   string   `json:"status"`
			Degraded []string `json:"degraded"`
		}{true, "degraded", degraded})
	}
	return ok(w, struct {
		Success bool   `json:"success"`
		Status  string `json:"status"`
	}{true, "ready"})
}

// degraded lists the failing checks that degrade ("backup: ...").
func (s *Server) degraded() []string {
	var out []string
	for _, c := range s.readyChecks {
		if !c.Degrades {
			continue
		}
		if err := c.Check(); err != nil {
			out = append(out, readyFailure{Name: c.Name, Reason: err.Error()}.String())
		}
	}
	return out
}

// readyFailure is one part that keeps the server from being ready.
type readyFailure struct {
	Name   string // "store", "scheduler", or a ReadyCheck's Name
	Reason string
	Detail string // the check's Detail, when asked for and it says more
}

func (f readyFailure) String() string { return f.Name + ": " + f.Reason }

// notReady returns what keeps the server from being ready, in the order
// GET /ready names them; with detail (for the signed-in dashboard),
// each failing check's Detail too.
func (s *Server) notReady(ctx context.Context, detail bool) []readyFailure {
	var failing []readyFailure
	if err := s.auth.Usable(ctx); err != nil {
		failing = append(failing, readyFailure{Name: "store", Reason: err.Error()})
	}
	if !s.ready() {
		failing = append(failing, readyFailure{Name: "scheduler", Reason: "not running"})
	}
	for _, c := range s.readyChecks {
		if c.Degrades {
			continue // not a reason to be not ready (degraded)
		}
		err := c.Check()
		if err == nil {
			continue
		}
		f := readyFailure{Name: c.Name, Reason: err.Error()}
		if detail && c.Detail != nil {
			if d := c.Detail(); d != nil && d.Error() != f.Reason {
				f.Detail = d.Error()
			}
		}
		failing = append(failing, f)
	}
	return failing
}
