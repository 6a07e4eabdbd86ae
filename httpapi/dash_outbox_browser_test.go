package httpapi_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"latchkey/mail"
)

// TestOutboxInChromium: in headless Chromium, the operator signs in to
// the dashboard, opens the Outbox from the navigation, reads the code a
// sign-in mailed, and the API signs the user in with it. The message's
// HTML part renders in its frame, and a script in a message (a crafted
// file) does not run.
func TestOutboxInChromium(t *testing.T) {
	t.Parallel()
	ts, dir := newOutboxServer(t)
	crafted := &mail.Message{ID: "crafted", From: "x@example.com", To: "mallory@example.com", Subject: "Crafted",
		Text: "text", HTML: `<p id="x">untouched</p><script>document.getElementById("x").textContent = "script ran"</script>` +
			`<img src="nowhere" onerror="document.getElementById('x').textContent = 'handler ran'">`,
		Date: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := (&mail.Outbox{Dir: dir}).Send(ctx, crafted); err != nil {
		t.Fatal(err)
	}
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "ada@example.com"}))
	ts.deliverMail(dir)

	bctx := newBrowser(t)
	load := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		get(t, bctx, what, chromedp.WaitEvent(page.LoadEventFired, nil, a))
	}
	do(t, bctx, "open the dashboard", chromedp.Navigate(ts.URL+"/admin/"))
	setValue(t, bctx, `input[name=token]`, testAdminToken)
	load("sign in", chromedp.Click(chromedp.CSS(`form[action="/admin/login"] button`)))
	load("open the outbox", chromedp.Click(chromedp.CSS(`header a[href="/admin/outbox"]`)))
	if h1 := get(t, bctx, "h1", chromedp.Text(chromedp.CSS("h1"))); h1 != "Outbox" {
		t.Fatalf("h1 %q, page %q", h1, pageText(t, bctx))
	}
	if to := get(t, bctx, "recipient", chromedp.Text(chromedp.CSS(`#mail-0 td.to`))); to != "ada@example.com" {
		t.Fatalf("newest message to %q, want ada@example.com", to)
	}
	code := strings.TrimSpace(get(t, bctx, "code", chromedp.Text(chromedp.CSS(`#mail-0 code.code`))))

	// Inside the frames (each in a process of its own: a sandboxed
	// frame is isolated like another site's): ada's HTML part shows the
	// code; the crafted message's script and handler did not run.
	var frames []string
	for deadline := time.Now().Add(10 * time.Second); len(frames) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the message frames read %q, want 2 frames", frames)
		}
		frames = frames[:0]
		infos, err := chromedp.Targets(bctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			if info.Type != "iframe" || info.URL != "about:srcdoc" {
				continue
			}
			fctx, cancel := chromedp.NewContext(bctx, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel())
			text, err := chromedp.Run(fctx, chromedp.Evaluate[string](`document.readyState === "complete" ? document.body.innerText : ""`))
			cancel()
			if err == nil && text != "" {
				frames = append(frames, text)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(frames)
	if !strings.Contains(frames[0], code) || !strings.Contains(frames[0], "Your sign-in code for default is:") || strings.TrimSpace(frames[1]) != "untouched" {
		t.Fatalf("the frames read %q; want ada's message with the code %s, and the crafted one untouched", frames, code)
	}

	// The API signs ada in with the code read from the page.
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "ada@example.com", "code": code})
	wantOK(t, r)
	if str(t, r.Body, "token") == "" {
		t.Fatalf("verify: %s", r.Raw)
	}
	if shots := os.Getenv("LATCHKEY_SCREENSHOT_DIR"); shots != "" {
		shot := get(t, bctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(shots, "dashboard-outbox.png"), shot, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
