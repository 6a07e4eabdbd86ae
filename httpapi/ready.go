package httpapi

import (
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
}

// readiness answers GET /api/v1/ready (no auth): 200 {success, status:
// "ready"} when the store is usable, the scheduler runs and every
// configured check passes; else 503 NOT_READY naming each that fails.
// GET /health stays liveness: it does not look at any of these.
func (s *Server) readiness(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var failing []string
	if err := s.auth.Usable(); err != nil {
		failing = append(failing, "store: "+err.Error())
	}
	if !s.ready() {
		failing = append(failing, "scheduler: not running")
	}
	for _, c := range s.readyChecks {
		if err := c.Check(); err != nil {
			failing = append(failing, c.Name+": "+err.Error())
		}
	}
	if len(failing) > 0 {
		return auth.ErrNotReady.With("Not ready: " + strings.Join(failing, "; ") + ".")
	}
	return ok(w, struct {
		Success bool   `json:"success"`
		Status  string `json:"status"`
	}{true, "ready"})
}
