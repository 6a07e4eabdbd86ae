package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsAddrAndReady: with --metrics-addr, GET /metrics is served
// there without authentication (and nothing else is); on the main
// listener it still needs the admin token. /api/v1/ready answers ready
// once the server runs.
func TestMetricsAddrAndReady(t *testing.T) {
	t.Parallel()
	m, out := startMain(t, Config{MetricsAddr: "127.0.0.1:0"})
	admin := match(t, adminLine, out.String())
	c := client{t, "http://" + m.Addr()}

	if status, body := c.do("GET", "/api/v1/ready", "", nil); status != 200 || body["status"] != "ready" {
		t.Fatalf("ready: %d %v", status, body)
	}
	if status, body := c.do("GET", "/metrics", "", nil); status != 401 || body["code"] != "UNAUTHORIZED" {
		t.Fatalf("/metrics on the main listener without a token: %d %v", status, body)
	}
	get := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, text := get("http://"+m.Addr()+"/metrics", admin)
	if status != 200 || !strings.Contains(text, "latchkey_build_info{") {
		t.Fatalf("/metrics with the admin token: %d\n%s", status, text)
	}
	if m.MetricsAddr() == "" || m.MetricsAddr() == m.Addr() {
		t.Fatalf("metrics address %q", m.MetricsAddr())
	}
	status, text = get("http://"+m.MetricsAddr()+"/metrics", "")
	if status != 200 || !strings.Contains(text, `latchkey_build_info{goversion="go`) ||
		!strings.Contains(text, `latchkey_http_requests_total{code="200",method="GET",route="/api/v1/ready"} 1`) ||
		!strings.Contains(text, "latchkey_store_file_size_bytes ") {
		t.Fatalf("/metrics on --metrics-addr: %d\n%s", status, text)
	}
	for _, path := range []string{"/", "/api/v1/health", "/api/v1/admin/projects"} {
		if status, _ := get("http://"+m.MetricsAddr()+path, admin); status != 404 {
			t.Fatalf("GET %s on the metrics listener: %d, want 404", path, status)
		}
	}
}
