package main

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/httpapi"
)

// rawRequest sends a GET of path whose request line and headers take
// exactly size bytes (padded by one X-Pad header) on a new connection,
// and returns the response status.
func rawRequest(t *testing.T, addr, path string, size int) int {
	t.Helper()
	head := "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
	tail := "\r\n\r\n"
	pad := size - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("size %d too small", size)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { // the server may answer before it has read everything
		conn.Write([]byte(head + strings.Repeat("a", pad) + tail))
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%d-byte request: %v", size, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestHeaderLimit is finding 8's last attack: 800 connections with 1 MiB
// headers took 850 MB. The request line and headers may take 64 KiB;
// one byte more, or a megabyte, is 431 before any handler runs.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, Config{})
	for _, c := range []struct {
		size int
		want int
	}{
		{4 << 10, 200},
		{64 << 10, 200},
		{64<<10 + 1, http.StatusRequestHeaderFieldsTooLarge},
		{1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		if got := rawRequest(t, m.Addr(), "/api/v1/health", c.size); got != c.want {
			t.Fatalf("%d bytes of headers: status %d, want %d", c.size, got, c.want)
		}
	}
	// Many at once are each refused (each costs the server at most 64 KiB).
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rawRequest(t, m.Addr(), "/api/v1/health", 1<<20) == http.StatusRequestHeaderFieldsTooLarge {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if refused.Load() != 50 {
		t.Fatalf("%d of 50 megabyte headers refused", refused.Load())
	}
	if m.http.MaxHeaderBytes != httpapi.MaxHeaderBytes {
		t.Fatalf("MaxHeaderBytes %d", m.http.MaxHeaderBytes)
	}
}
