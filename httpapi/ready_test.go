package httpapi_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"latchkey/httpapi"
)

// TestReady: GET /api/v1/ready (no auth) is 200 {success, status:"ready"}
// while the store is usable, the scheduler runs and every configured
// check passes; while only a check that degrades fails, 200 {success,
// status:"degraded", degraded:["name: reason"]}; otherwise 503 NOT_READY
// naming each failing part (not the degrading ones), while /health stays
// 200 (liveness). The store case comes last: it closes the data file
// under the server.
func TestReady(t *testing.T) {
	t.Parallel()
	var scheduler atomic.Bool
	scheduler.Store(true)
	var mailErr, backupErr atomic.Pointer[error]
	check := func(p *atomic.Pointer[error]) func() error {
		return func() error {
			if e := p.Load(); e != nil {
				return *e
			}
			return nil
		}
	}
	ts := newTestServerAPI(t, func(c *httpapi.Config) {
		c.Ready = scheduler.Load
		c.ReadyChecks = []httpapi.ReadyCheck{{Name: "mail", Check: check(&mailErr)}, {Name: "backup", Check: check(&backupErr), Degrades: true}}
	})

	r := ts.do("GET", "/api/v1/ready", "", nil)
	wantOK(t, r)
	if r.Body["status"] != "ready" || len(r.Body) != 2 {
		t.Fatalf("body=%s, want exactly {success:true, status:\"ready\"}", r.Raw)
	}

	notReady := func(want ...string) {
		t.Helper()
		r := ts.do("GET", "/api/v1/ready", "", nil)
		wantError(t, r, http.StatusServiceUnavailable, "NOT_READY")
		if len(r.Body) != 3 {
			t.Fatalf("body=%s, want exactly {success, error, code}", r.Raw)
		}
		msg := r.Body["error"].(string)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Fatalf("error=%q, want it to name %q", msg, w)
			}
		}
		wantOK(t, ts.do("GET", "/api/v1/health", "", nil))
	}

	authFailed := errors.New("SMTP authentication failed (535)")
	mailErr.Store(&authFailed)
	notReady("mail: SMTP authentication failed (535)")
	scheduler.Store(false)
	r = ts.do("GET", "/api/v1/ready", "", nil)
	if msg, _ := r.Body["error"].(string); !strings.Contains(msg, "scheduler: not running") || !strings.Contains(msg, "mail:") {
		t.Fatalf("error=%q, want both the scheduler and mail named", msg)
	}
	scheduler.Store(true)
	mailErr.Store(nil)
	wantOK(t, ts.do("GET", "/api/v1/ready", "", nil))

	// A check that degrades: still 200, listed; with a failing part too,
	// 503 naming only that part.
	failed := errors.New("the last 2 attempts failed")
	backupErr.Store(&failed)
	r = ts.do("GET", "/api/v1/ready", "", nil)
	wantOK(t, r)
	if d, _ := r.Body["degraded"].([]any); r.Body["status"] != "degraded" || len(r.Body) != 3 || len(d) != 1 || d[0] != "backup: the last 2 attempts failed" {
		t.Fatalf("body=%s, want {success:true, status:\"degraded\", degraded:[\"backup: the last 2 attempts failed\"]}", r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/health", "", nil))
	mailErr.Store(&authFailed)
	notReady("mail: SMTP authentication failed (535)")
	if r := ts.do("GET", "/api/v1/ready", "", nil); strings.Contains(r.Body["error"].(string), "backup") {
		t.Fatalf("error=%q names the degrading check", r.Body["error"])
	}
	mailErr.Store(nil)
	backupErr.Store(nil)
	r = ts.do("GET", "/api/v1/ready", "", nil)
	if r.Body["status"] != "ready" || len(r.Body) != 2 {
		t.Fatalf("body=%s, want ready again", r.Raw)
	}

	ts.breakStore()
	r = ts.do("GET", "/api/v1/ready", "", nil)
	wantError(t, r, http.StatusServiceUnavailable, "NOT_READY")
	// The store's own words differ by backend ("data file is not open",
	// "closed"); the store is named, and nothing else.
	if msg := r.Body["error"].(string); !strings.HasPrefix(msg, "Not ready: store: ") || strings.Contains(msg, "mail") {
		t.Fatalf("error=%q, want the store named, alone", msg)
	}
}
