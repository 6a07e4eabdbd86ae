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
// check passes; otherwise 503 NOT_READY naming each failing part, while
// /health stays 200 (liveness). The store case comes last: it closes
// the data file under the server.
func TestReady(t *testing.T) {
	t.Parallel()
	var scheduler atomic.Bool
	scheduler.Store(true)
	var mailErr atomic.Pointer[error]
	ts := newTestServerAPI(t, func(c *httpapi.Config) {
		c.Ready = scheduler.Load
		c.ReadyChecks = []httpapi.ReadyCheck{{Name: "mail", Check: func() error {
			if p := mailErr.Load(); p != nil {
				return *p
			}
			return nil
		}}}
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

	ts.breakStore()
	r = ts.do("GET", "/api/v1/ready", "", nil)
	wantError(t, r, http.StatusServiceUnavailable, "NOT_READY")
	// The store's own words differ by backend ("data file is not open",
	// "closed"); the store is named, and nothing else.
	if msg := r.Body["error"].(string); !strings.HasPrefix(msg, "Not ready: store: ") || strings.Contains(msg, "mail") {
		t.Fatalf("error=%q, want the store named, alone", msg)
	}
}
