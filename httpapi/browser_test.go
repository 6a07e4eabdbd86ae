package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserTimeout bounds one browser test, browser start included; each
// takes a few seconds.
const browserTimeout = 60 * time.Second

// browserSlot lets one Chromium run at a time in the test binary: the
// browser tests call t.Parallel and run beside the other tests, but
// several browsers at once on two busy cores made one outlast
// browserTimeout (the dashboard's, on a machine at load 20). A test
// waits for the slot before its bound starts.
var browserSlot = make(chan struct{}, 1)

// findChromium returns the path of Debian's Chromium, or "" when it is
// not installed.
func findChromium() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts headless Chromium with a fresh profile in the test's
// temp dir and returns its tab's context, bounded by browserTimeout and
// closed when the test ends. Console output and page errors go to the
// test log. Without Chromium the test is skipped with a loud message, or
// fails when LATCHKEY_REQUIRE_BROWSER=1 (as .ci/run sets).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		msg := "BROWSER TEST NOT RUN: Chromium not found (/usr/bin/chromium, or chromium or chromium-browser on PATH); install Debian's chromium package"
		if os.Getenv("LATCHKEY_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " (required: LATCHKEY_REQUIRE_BROWSER=1)")
		}
		t.Skip("!!!!! " + msg + " !!!!!")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// The network here is closed: without these flags Chromium's
		// own connections (updates, sync, field trials) are refused and
		// slow it down.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
	}
	browserSlot <- struct{}{}
	var mu sync.Mutex
	done := false
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf(format, args...)
		}
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx,
		chromedp.WithErrorf(func(format string, args ...any) { logf("chromedp: "+format, args...) }),
		chromedp.WithListener(func(ev any) {
			switch ev := ev.(type) {
			case *runtime.EventConsoleAPICalled:
				var args []string
				for _, a := range ev.Args {
					if a.Value != nil {
						args = append(args, string(a.Value))
					} else {
						args = append(args, a.Description)
					}
				}
				logf("console.%s: %s", ev.Type, strings.Join(args, " "))
			case *runtime.EventExceptionThrown:
				d := ev.ExceptionDetails
				msg := d.Text
				if d.Exception != nil {
					msg += " " + d.Exception.Description
				}
				logf("page exception: %s", msg)
			}
		}))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit before TempDir's removal
		cancelTimeout()
		mu.Lock()
		done = true
		mu.Unlock()
		<-browserSlot
	})
	start := time.Now()
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	t.Logf("Chromium started in %v", time.Since(start).Round(time.Millisecond))
	return tab
}

// do runs browser actions, failing the test with what on error.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, explain(err))
	}
}

// get runs one browser action and returns its value, failing the test
// with what on error.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, explain(err))
	}
	return v
}

func explain(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (a browser test may take %v)", err, browserTimeout)
	}
	return err
}

// waitText waits up to 10 seconds until the element matching the CSS
// selector sel contains want, and returns its text.
func waitText(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); return n !== null && n.textContent.includes(%q); })()`, sel, want)
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		last, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {textContent: "<no such element>"}).textContent`, sel)))
		t.Fatalf("waiting for %q in %s: %v; it reads %q", want, sel, explain(err), last)
	}
	return get(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// setValue sets the value of the form field matching the CSS selector sel.
func setValue(t *testing.T, ctx context.Context, sel, v string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); if (n === null) return false; n.value = %q; return true; })()`, sel, v)
	if !get(t, ctx, "set "+sel, chromedp.Evaluate[bool](js)) {
		t.Fatalf("set %s: no such element", sel)
	}
}

// pageText returns the text of the whole page.
func pageText(t *testing.T, ctx context.Context) string {
	t.Helper()
	return get(t, ctx, "page text", chromedp.Evaluate[string](`document.body.innerText`))
}
