package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// fwdChrome drives Chromium through a proxy's forward-auth and its
// sign-in pages (the nginx and Traefik tests in Chromium).
type fwdChrome struct {
	t   *testing.T
	ts  *testServer
	ctx context.Context
}

// open runs the actions and returns the response of the document they
// load (the last of a chain of redirects).
func (c *fwdChrome) open(what string, actions ...chromedp.Action[chromedp.Void]) *network.Response {
	c.t.Helper()
	res, err := chromedp.RunResponse(c.ctx, actions...)
	if err != nil {
		c.t.Fatalf("%s: %v", what, explain(err))
	}
	return res
}

// navigate opens u.
func (c *fwdChrome) navigate(u string) *network.Response {
	c.t.Helper()
	return c.open("open "+u, chromedp.Navigate(u))
}

// location is the address the browser is at.
func (c *fwdChrome) location() string {
	c.t.Helper()
	return get(c.t, c.ctx, "location", chromedp.Location())
}

// h1 is the page's heading ("" for none).
func (c *fwdChrome) h1() string {
	c.t.Helper()
	return get(c.t, c.ctx, "h1", chromedp.Evaluate[string](`(document.querySelector("h1") || {textContent: ""}).textContent`))
}

// submit presses the submit button of the sign-in pages' form posted
// to path (/signin, /signin/code, /signin/mfa).
func (c *fwdChrome) submit(what, path string) *network.Response {
	c.t.Helper()
	return c.open(what, chromedp.Click(chromedp.CSS(`form[action*="`+path+`?rd="] button[type=submit]`)))
}

// signIn goes through the email and code pages the browser is on as
// addr and returns the response of the page it lands on.
func (c *fwdChrome) signIn(addr string) *network.Response {
	c.t.Helper()
	if c.h1() != "Sign in" {
		c.t.Fatalf("not the sign-in page at %s: %q", c.location(), pageText(c.t, c.ctx))
	}
	setValue(c.t, c.ctx, "input[name=email]", addr)
	c.submit("send the code", "/signin")
	if c.h1() != "Enter your code" {
		c.t.Fatalf("not the code page for %s: %q", addr, pageText(c.t, c.ctx))
	}
	setValue(c.t, c.ctx, "input[name=code]", c.ts.lastMail(addr).Code)
	res := c.submit("enter the code", "/signin/code")
	c.ts.Clock.Advance(31 * time.Second) // past the send throttle
	return res
}

// appSays fails unless the browser shows the echo app's answer for path
// with the identity of addr (groups).
func (c *fwdChrome) appSays(res *network.Response, path, addr, groups string) {
	c.t.Helper()
	want := fmt.Sprintf("app %s user=%s email=%s groups=%s name=", path, c.ts.userByEmail(addr).ID, addr, groups)
	if got := pageText(c.t, c.ctx); res.Status != http.StatusOK || got != want {
		c.t.Fatalf("at %s: %d %q, want the app's %q", c.location(), res.Status, got, want)
	}
}
