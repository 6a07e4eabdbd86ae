package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// BenchmarkImportMillion imports 1,000,000 users as JSON lines into a
// `latchkey serve` child process on a fresh store of the backend the
// tests run on (LATCHKEY_TEST_STORE=postgres: a database) and reports
// lines per second and the server's peak RSS (VmHWM), before and after:
// the import streams its body, so the peak must not grow with the file
// (about 55 MB here). Then it exports them back and reports that rate.
// It runs on demand, not in the test command:
//
//	go test -run '^$' -bench ImportMillion -benchtime 1x .
func BenchmarkImportMillion(b *testing.B) {
	const lines = 1_000_000
	data := storetest.New(b)
	args := "serve --addr 127.0.0.1:0 --data " + data
	env := os.Environ()
	if store.IsURL(data) {
		args = "serve --addr 127.0.0.1:0 --database-url " + data
		env = append(env, "LATCHKEY_MASTER_KEY="+testMasterKey)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(env, "LATCHKEY_TEST_ARGS="+args, "LATCHKEY_ADMIN_TOKEN="+growthAdmin)
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr := ""
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`msg="latchkey listening" addr=(\S+)`)
	for addr == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		b.Fatal("the server never listened")
	}
	base := "http://" + addr + "/api/v1/admin"
	call := func(method, path, ctype string, body io.Reader) *http.Response {
		req, _ := http.NewRequest(method, base+path, body)
		req.Header.Set("Authorization", "Bearer "+growthAdmin)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if res.StatusCode != 200 {
			raw, _ := io.ReadAll(res.Body)
			b.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		return res
	}
	var created struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	res := call("POST", "/projects", "application/json", strings.NewReader(`{"name":"import"}`))
	json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	pid := cmd.Process.Pid
	before := procField(pid, "status", "VmHWM")

	// About 57 bytes a line: 57 MB, under the 64 MiB limit.
	pr, pw := io.Pipe()
	size := make(chan int64, 1)
	go func() {
		w := bufio.NewWriterSize(pw, 64<<10)
		var n int64
		for i := range lines {
			k, _ := fmt.Fprintf(w, `{"email":"user%07d@example.com","firstName":"User %d"}`+"\n", i, i)
			n += int64(k)
		}
		w.Flush()
		pw.Close()
		size <- n
	}()
	// Peak anonymous memory (the heap and stacks, without the data file's
	// mapped pages, which VmHWM counts too), sampled every 20 ms.
	peakAnon := func() (stop func() int64) {
		done, out := make(chan struct{}), make(chan int64)
		go func() {
			var peak int64
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				peak = max(peak, procField(pid, "status", "RssAnon"))
				select {
				case <-done:
					out <- peak
					return
				case <-t.C:
				}
			}
		}()
		return func() int64 { close(done); return <-out }
	}
	anonBefore := procField(pid, "status", "RssAnon")
	stopAnon := peakAnon()
	b.ResetTimer()
	start := time.Now()
	res = call("POST", "/projects/"+created.Project.ID+"/users/import", "application/x-ndjson", pr)
	var rep struct {
		Created  int   `json:"created"`
		Updated  int   `json:"updated"`
		Rejected []any `json:"rejected"`
	}
	json.NewDecoder(res.Body).Decode(&rep)
	res.Body.Close()
	took := time.Since(start)
	after := procField(pid, "status", "VmHWM")
	anon := stopAnon()
	if rep.Created != lines || len(rep.Rejected) != 0 {
		b.Fatalf("created %d, rejected %d; want %d and 0", rep.Created, len(rep.Rejected), lines)
	}
	b.ReportMetric(float64(lines)/took.Seconds(), "lines/s")
	b.ReportMetric(float64(after)/1024, "peakRSS-MB")
	b.ReportMetric(float64(anon)/1024, "peakAnon-MB")
	b.Logf("import of %d lines (%.1f MB): %v, %.0f lines/s; server peak RSS (VmHWM, with the mapped data file) %d MB before, %d MB after; "+
		"anonymous memory %d MB before, at most %d MB during the import",
		lines, float64(<-size)/1e6, took.Round(time.Millisecond), float64(lines)/took.Seconds(), before>>10, after>>10, anonBefore>>10, anon>>10)
	if fi, err := os.Stat(data); err == nil && !store.IsURL(data) {
		b.Logf("data file: %.0f MB", float64(fi.Size())/1e6)
	}

	stopAnon = peakAnon()
	start = time.Now()
	res = call("GET", "/projects/"+created.Project.ID+"/users/export", "", nil)
	n := 0
	rd := bufio.NewReaderSize(res.Body, 64<<10)
	for {
		_, err := rd.ReadSlice('\n')
		if err != nil {
			break
		}
		n++
	}
	res.Body.Close()
	took = time.Since(start)
	if n != lines {
		b.Fatalf("exported %d lines, want %d", n, lines)
	}
	b.Logf("export of %d users: %v, %.0f lines/s; server peak RSS %d MB, anonymous memory at most %d MB",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), procField(pid, "status", "VmHWM")>>10, stopAnon()>>10)
}
