package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/oauth2"

	"latchkey/auth"
)

// The accessibility basics of every hosted page, over real HTTP: the
// page's language, a title and one heading, a label for every field,
// errors announced and tied to the field they are about, buttons that
// are buttons.

// TestHostedPagesAccessible opens every hosted page (the sign-in, code,
// second-factor, magic-link, consent, device, sign-out, signed-out,
// error, form_post and account pages, with their failures, one in
// French) and checks each as wantAccessible does.
func TestHostedPagesAccessible(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	issuer := ts.issuer(pid)
	wantOK(t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/fr", map[string]any{"sign_in_title": "Connexion"}))
	rp := ts.newRP(pid, map[string]any{"postLogoutRedirectUris": []string{rpLogoutBye}}) // third-party: the consent page
	first := ts.newRP(pid, map[string]any{"firstParty": true})
	strict := ts.newRP(pid, map[string]any{"firstParty": true, "requireMfa": true})
	dev := ts.deviceRP(nil)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	const addr, mfaAddr = "a11y@example.com", "a11y-mfa@example.com"

	// A user with TOTP.
	tok := str(t, ts.login(mfaAddr).Body, "token")
	secret := ts.enrollTOTP(tok)
	m := ts.newBrowser()
	s := ts.newBrowser() // a user without a second factor, a client requiring one

	var signIn, code, mfa, setup, consent, device, confirm, signOut, acct *webPage
	var mailed string // the code's, before a link is mailed
	a := ts.newBrowser()
	fr := ts.newBrowser()
	fr.client.Transport = langTransport("fr")
	for _, c := range []struct {
		name, lang string
		status     int
		open       func() *webPage
	}{
		{"sign-in", "en", http.StatusOK, func() *webPage { signIn = rp.authorize(b, verifier, "st", "n"); return signIn }},
		{"sign-in, bad address", "en", http.StatusBadRequest, func() *webPage { return b.submit(signIn, map[string]string{"email": "not an address"}) }},
		{"sign-in in French", "fr", http.StatusOK, func() *webPage { return rp.authorize(fr, verifier, "st", "n") }},
		{"code", "en", http.StatusOK, func() *webPage {
			code = b.submit(signIn, map[string]string{"email": addr})
			mailed = ts.lastMail(addr).Code
			return code
		}},
		{"code, wrong code", "en", http.StatusUnauthorized, func() *webPage {
			return b.submit(code, map[string]string{"code": wrongCode(mailed)})
		}},
		{"magic link sent", "en", http.StatusOK, func() *webPage { return b.submitTo(code, auth.OIDCSendLinkPath, nil) }},
		{"magic link confirm", "en", http.StatusOK, func() *webPage { return ts.newBrowser().get(ts.lastMailOf(addr, "magic").Link) }},
		{"consent", "en", http.StatusOK, func() *webPage { consent = b.submit(code, map[string]string{"code": mailed}); return consent }},
		{"consent, no decision", "en", http.StatusBadRequest, func() *webPage { return b.submit(consent, map[string]string{"decision": "\x00"}) }},
		{"second factor", "en", http.StatusOK, func() *webPage { mfa = m.signIn(first.authorize(m, verifier, "st", "n"), mfaAddr); return mfa }},
		{"second factor, wrong code", "en", http.StatusUnauthorized, func() *webPage {
			return m.submit(mfa, map[string]string{"code": wrongCode(ts.totpCode(secret, 0))})
		}},
		{"second factor set-up, intro", "en", http.StatusOK, func() *webPage {
			setup = s.signIn(strict.authorize(s, verifier, "st", "n"), "a11y-setup@example.com")
			return setup
		}},
		{"second factor set-up", "en", http.StatusOK, func() *webPage { setup = s.submit(setup, nil); return setup }},
		{"second factor set-up, wrong code", "en", http.StatusUnauthorized, func() *webPage {
			return s.submit(setup, map[string]string{"code": "000000"})
		}},
		{"form_post", "en", http.StatusOK, func() *webPage {
			return first.authorize(b, verifier, "st", "n", oauth2.SetAuthURLParam("response_mode", "form_post"))
		}},
		{"device", "en", http.StatusOK, func() *webPage { device = b.get(issuer + "/device"); return device }},
		{"device, wrong code", "en", http.StatusUnauthorized, func() *webPage { return b.submit(device, map[string]string{"user_code": "BBBB-BBBB"}) }},
		{"device, confirm", "en", http.StatusOK, func() *webPage {
			confirm = b.enterCode(issuer+"/device", dev.deviceCodes().UserCode)
			return confirm
		}},
		{"device, connected", "en", http.StatusOK, func() *webPage { return b.submit(confirm, map[string]string{"decision": "allow"}) }},
		{"device, denied", "en", http.StatusOK, func() *webPage {
			return b.submit(b.enterCode(issuer+"/device", dev.deviceCodes().UserCode), map[string]string{"decision": "deny"})
		}},
		{"sign-out confirmation", "en", http.StatusOK, func() *webPage {
			signOut = b.get(issuer + auth.OIDCLogoutPath + "?" + url.Values{"client_id": {rp.id}, "post_logout_redirect_uri": {rpLogoutBye}}.Encode())
			return signOut
		}},
		{"sign-out, stale form", "en", http.StatusForbidden, func() *webPage { return b.submit(signOut, map[string]string{"csrf": "\x00"}) }},
		{"signed out", "en", http.StatusOK, func() *webPage { return ts.newBrowser().get(issuer + auth.OIDCLogoutPath) }},
		{"error, unknown client", "en", http.StatusBadRequest, func() *webPage {
			return b.get(issuer + "/authorize?client_id=nope&redirect_uri=x&response_type=code&scope=openid")
		}},
		{"error, stale form", "en", http.StatusForbidden, func() *webPage { return b.submit(signIn, map[string]string{"csrf": "\x00"}) }},
		{"account sign-in", "en", http.StatusOK, func() *webPage { return ts.newBrowser().get(ts.accountURL()) }},
		{"account", "en", http.StatusOK, func() *webPage { acct = ts.accountSignIn(a, "a11y-account@example.com"); return acct }},
		{"account, TOTP", "en", http.StatusOK, func() *webPage { return a.submitTo(acct, "/totp-enroll", nil) }},
		{"account, stale form", "en", http.StatusForbidden, func() *webPage {
			return a.submitTo(acct, "/session-end", map[string]string{"csrf": "1.abc"})
		}},
	} {
		pg := c.open()
		if pg.Status != c.status {
			t.Fatalf("%s: %d %q %s, want %d", c.name, pg.Status, pg.Location, pg.Body, c.status)
		}
		wantAccessible(t, c.name, pg.Body, c.lang)
	}
}

// wantAccessible fails unless page, a hosted page's HTML, has: lang
// on <html> (want), a title, a viewport for small screens, one <h1>
// (a page that posts itself at once, whose only content is its button
// for browsers without scripts, has none) and no heading level skipped;
// for every field but hidden ones an id and a <label for> it with
// text; every error (class error) announced (role=alert) with text,
// and, on a page with one field, that field marked invalid and
// described by the error (aria-invalid, aria-describedby); every
// aria-describedby naming an element of the page; every button a
// <button> with a type and text, no element made clickable by a script
// attribute or role=button, no tabindex that changes the focus order
// (the page's order is its reading order), every link with an address,
// every image with alt.
func wantAccessible(t *testing.T, what, page, lang string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var nodes []*html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode {
			nodes = append(nodes, n)
		}
	}
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	text := func(n *html.Node) string {
		var b strings.Builder
		for d := range n.Descendants() {
			if d.Type == html.TextNode {
				b.WriteString(d.Data)
			}
		}
		return strings.TrimSpace(b.String())
	}
	ids, labels := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		if id, ok := attr(n, "id"); ok {
			ids[id] = true
		}
		if f, ok := attr(n, "for"); ok && n.Data == "label" && text(n) != "" {
			labels[f] = true
		}
	}
	var fail []string
	failf := func(format string, args ...any) { fail = append(fail, fmt.Sprintf(format, args...)) }
	h1, level, title, viewport := 0, 0, false, false
	var fields []*html.Node
	errorID := ""
	for _, n := range nodes {
		switch n.Data {
		case "html":
			if l, _ := attr(n, "lang"); l != lang {
				failf("<html lang=%q>, want %q", l, lang)
			}
		case "title":
			title = text(n) != ""
		case "meta":
			if name, _ := attr(n, "name"); name == "viewport" {
				viewport = true
			}
		case "h1", "h2", "h3", "h4":
			l := int(n.Data[1] - '0')
			if l == 1 {
				h1++
			}
			if l > level+1 {
				failf("<%s> %q after <h%d>: a heading level skipped", n.Data, text(n), level)
			}
			if text(n) == "" {
				failf("an empty <%s>", n.Data)
			}
			level = l
		case "input", "select", "textarea":
			if typ, _ := attr(n, "type"); typ == "hidden" {
				continue
			}
			fields = append(fields, n)
			id, _ := attr(n, "id")
			name, _ := attr(n, "name")
			if _, aria := attr(n, "aria-label"); !labels[id] && !aria {
				failf("the field %q has no label", name)
			}
		case "button":
			if typ, _ := attr(n, "type"); typ != "submit" && typ != "button" {
				failf("a button %q without type=submit or button", text(n))
			}
			if _, aria := attr(n, "aria-label"); text(n) == "" && !aria {
				failf("a button without text")
			}
		case "a":
			if href, _ := attr(n, "href"); href == "" {
				failf("a link %q without an address", text(n))
			}
		case "img":
			if _, ok := attr(n, "alt"); !ok {
				failf("an image without alt")
			}
		}
		if class, _ := attr(n, "class"); strings.Contains(" "+class+" ", " error ") {
			if role, _ := attr(n, "role"); role != "alert" || text(n) == "" {
				failf("the error %q is not announced (role=%q)", text(n), role)
			}
			errorID, _ = attr(n, "id")
		}
		if ref, ok := attr(n, "aria-describedby"); ok && !ids[ref] {
			failf("aria-describedby=%q names no element", ref)
		}
		if ti, ok := attr(n, "tabindex"); ok && ti != "0" && ti != "-1" {
			failf("<%s tabindex=%q>: the focus leaves the page's order", n.Data, ti)
		}
		if role, _ := attr(n, "role"); role == "button" {
			failf("a <%s role=button>: a button that is no button", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				failf("<%s %s>: a script in an attribute", n.Data, a.Key)
			}
		}
	}
	// A form's error is about its one field, when it has one.
	if len(fields) == 1 && errorID != "" {
		ref, _ := attr(fields[0], "aria-describedby")
		invalid, _ := attr(fields[0], "aria-invalid")
		if ref != errorID || invalid != "true" {
			failf("the error is not tied to the field: aria-describedby=%q aria-invalid=%q, want %q and true", ref, invalid, errorID)
		}
	}
	if !title || !viewport {
		failf("title %v, viewport %v: want both", title, viewport)
	}
	if h1 != 1 && !(h1 == 0 && strings.Contains(page, "<noscript><button type=\"submit\">") && strings.Contains(page, "document.forms[0].submit()")) {
		failf("%d <h1>, want one", h1)
	}
	if len(fail) > 0 {
		t.Errorf("%s:\n\t%s\n%s", what, strings.Join(fail, "\n\t"), page)
	}
}
