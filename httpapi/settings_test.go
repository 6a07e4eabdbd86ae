package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestSettingsTakeEffectUnderLoad is finding 7 end to end: while other
// requests keep missing and filling the project and key caches, every
// deny-list change answers the very next request accordingly, and a
// revoked key is refused at once. (The race itself is widened
// deterministically in auth's TestProjectChangeNotLostToStaleFill. Three
// clients through 60 changes keep the caches missing and filling; six
// through 150 cost about 17 CPU-seconds a pass under the race detector.)
func TestSettingsTakeEffectUnderLoad(t *testing.T) {
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 1_000_000}))
	spare := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", ts.URL+"/api/v1/me", nil)
				req.Header.Set("Authorization", "Bearer "+ts.Key)
				if res, err := client.Do(req); err == nil {
					res.Body.Close()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 60; i++ {
		denied := i%2 == 0
		deny := []string{}
		if denied {
			deny = []string{"203.0.113.0/24"}
		}
		wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"denyCidrs": deny}))
		r := ts.fromIP(fmt.Sprintf("203.0.113.%d", i%250+1), "POST", "/api/v1/otp/verify", `{"email":"s@example.com","code":"123456"}`)
		if denied {
			wantError(t, r, 403, "RISK_BLOCKED")
		} else {
			wantError(t, r, 401, "INVALID_CODE")
		}
	}
	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+spare[:16]+"/revoke", nil))
	wantError(t, ts.do("GET", "/api/v1/me", spare, nil), 401, "API_KEY_REVOKED")
}
