package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"latchkey/auth"
)

// Branding and page texts of the hosted pages, over real HTTP: the
// project's displayName, logoUrl and accentColor, the admin API of the
// texts per locale, and what the pages show for a request's locale.

// TestProjectBranding: create and PATCH take displayName, logoUrl and
// accentColor, show them, refuse bad ones with VALIDATION_ERROR and
// change nothing then, and "" removes each.
func TestProjectBranding(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Acme", "displayName": " Acme Sign-in ",
		"logoUrl": "https://cdn.acme.example/logo.svg?v=2", "accentColor": "#0A7F3E"})
	wantOK(t, r)
	p := obj(t, r.Body, "project")
	id := str(t, p, "id")
	for k, want := range map[string]string{"displayName": "Acme Sign-in", "logoUrl": "https://cdn.acme.example/logo.svg?v=2", "accentColor": "#0a7f3e"} {
		if got := str(t, p, k); got != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	for _, c := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"long name", map[string]any{"displayName": strings.Repeat("é", 101)}, "displayName"},
		{"name on two lines", map[string]any{"displayName": "a\nb"}, "displayName"},
		{"http logo", map[string]any{"logoUrl": "http://cdn.acme.example/logo.svg"}, "logoUrl"},
		{"logo with credentials", map[string]any{"logoUrl": "https://u:p@cdn.acme.example/logo.svg"}, "logoUrl"},
		{"logo not a URL", map[string]any{"logoUrl": "javascript:alert(1)"}, "logoUrl"},
		{"long logo", map[string]any{"logoUrl": "https://cdn.acme.example/" + strings.Repeat("a", 2048)}, "logoUrl"},
		{"colour by name", map[string]any{"accentColor": "red"}, "accentColor"},
		{"short colour", map[string]any{"accentColor": "#abc"}, "accentColor"},
		{"colour with CSS", map[string]any{"accentColor": "#000000;}body{display:none"}, "accentColor"},
	} {
		r := ts.admin("PATCH", "/api/v1/admin/projects/"+id, c.body)
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if msg := str(t, r.Body, "error"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q, want it to name %s", c.name, msg, c.want)
		}
	}
	r = ts.admin("GET", "/api/v1/admin/projects/"+id, nil)
	wantOK(t, r)
	if got := str(t, obj(t, r.Body, "project"), "accentColor"); got != "#0a7f3e" {
		t.Fatalf("after refusals accentColor=%q, want it unchanged", got)
	}
	r = ts.admin("PATCH", "/api/v1/admin/projects/"+id, map[string]any{"displayName": "", "logoUrl": "", "accentColor": ""})
	wantOK(t, r)
	for _, k := range []string{"displayName", "logoUrl", "accentColor"} {
		if got := obj(t, r.Body, "project")[k]; got != "" {
			t.Errorf("after removal %s=%v, want \"\"", k, got)
		}
	}
}

// TestPageTextsAdmin: PUT, GET, list and DELETE of a locale's texts,
// and each refusal: VALIDATION_ERROR (locale, unknown keys named, not
// strings, empty or multi-line texts, not an object), PROJECT_NOT_FOUND,
// PAGE_TEXTS_NOT_FOUND; page texts are not mail templates.
func TestPageTextsAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	base := "/api/v1/admin/projects/" + ts.Project.ID + "/page-texts"

	r := ts.admin("PUT", base+"/pt-br", map[string]any{"sign_in_title": "Entrar", "continue_button": "Continuar"})
	wantOK(t, r)
	pt := obj(t, r.Body, "pageTexts")
	if str(t, pt, "locale") != "pt-BR" || obj(t, pt, "texts")["sign_in_title"] != "Entrar" || str(t, pt, "updatedAt") == "" {
		t.Fatalf("PUT answered %s", r.Raw)
	}
	wantOK(t, ts.admin("PUT", base+"/de", map[string]any{"sign_in_title": "Anmelden"}))
	r = ts.admin("GET", base+"/pt-BR", nil)
	wantOK(t, r)
	if got := obj(t, obj(t, r.Body, "pageTexts"), "texts"); len(got) != 2 || got["continue_button"] != "Continuar" {
		t.Fatalf("GET pt-BR texts %v, want the two uploaded", got)
	}
	r = ts.admin("GET", base, nil)
	wantOK(t, r)
	list, _ := r.Body["pageTexts"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["locale"] != "de" || list[1].(map[string]any)["locale"] != "pt-BR" {
		t.Fatalf("list %s, want de then pt-BR", r.Raw)
	}
	r = ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/templates", nil)
	wantOK(t, r)
	if tl, _ := r.Body["templates"].([]any); len(tl) != 0 {
		t.Fatalf("mail templates %s, want none: page texts are not mail", r.Raw)
	}

	for _, c := range []struct {
		name   string
		locale string
		body   any
		want   string
	}{
		{"unknown keys", "fr", map[string]any{"sign_in_title": "Connexion", "zzz": "x", "aaa": "y"}, "aaa, zzz"},
		{"bad locale", "not a locale!", map[string]any{"sign_in_title": "x"}, "locale"},
		{"number", "fr", map[string]any{"sign_in_title": 3}, "sign_in_title"},
		{"empty text", "fr", map[string]any{"sign_in_title": " "}, "sign_in_title"},
		{"two lines", "fr", map[string]any{"sign_in_title": "a\nb"}, "sign_in_title"},
		{"too long", "fr", map[string]any{"sign_in_title": strings.Repeat("x", 501)}, "sign_in_title"},
		{"array", "fr", `["sign_in_title"]`, "JSON object"},
		{"empty body", "fr", "", "JSON object"},
	} {
		r := ts.admin("PUT", base+"/"+strings.ReplaceAll(c.locale, " ", "%20"), c.body)
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if msg := str(t, r.Body, "error"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q, want it to name %q", c.name, msg, c.want)
		}
	}
	wantError(t, ts.admin("GET", base+"/fr", nil), http.StatusNotFound, "PAGE_TEXTS_NOT_FOUND")
	wantError(t, ts.admin("GET", base+"/bad_locale!", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("DELETE", base+"/fr", nil), http.StatusNotFound, "PAGE_TEXTS_NOT_FOUND")
	wantError(t, ts.admin("DELETE", base+"/bad_locale!", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	missing := "/api/v1/admin/projects/00000000-0000-0000-0000-000000000000/page-texts"
	wantError(t, ts.admin("PUT", missing+"/fr", map[string]any{"sign_in_title": "x"}), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("GET", missing, nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("GET", missing+"/fr", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("DELETE", missing+"/fr", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantError(t, ts.do("GET", base, "wrong-token", nil), http.StatusUnauthorized, "UNAUTHORIZED")

	wantOK(t, ts.admin("DELETE", base+"/pt-BR", nil))
	wantError(t, ts.admin("GET", base+"/pt-BR", nil), http.StatusNotFound, "PAGE_TEXTS_NOT_FOUND")
	r = ts.admin("GET", base, nil)
	wantOK(t, r)
	if list, _ := r.Body["pageTexts"].([]any); len(list) != 1 {
		t.Fatalf("list after delete %s, want de alone", r.Raw)
	}
}

// TestPagesBrandedAndLocalized: the sign-in page shows the project's
// displayName, logo (its origin alone added to the CSP's img-src) and
// accent colour; a pt-BR browser sees the texts uploaded for pt, with
// <html lang="pt">; ui_locales wins over Accept-Language; a text with
// markup is shown escaped; a deleted locale falls back to English at
// once; the forward-auth and account pages follow the same texts.
func TestPagesBrandedAndLocalized(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rp := ts.newRP(pid, nil)
	b := ts.newBrowser()
	signIn := func(accept string, opts ...oauth2.AuthCodeOption) *webPage {
		t.Helper()
		opts = append(opts, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
		req, err := http.NewRequest("GET", rp.config.AuthCodeURL("state", opts...), nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept-Language", accept)
		}
		pg := b.do(req)
		if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="email" type="email" autocomplete="username webauthn"`) {
			t.Fatalf("not the sign-in page: %d %s", pg.Status, pg.Body)
		}
		return pg
	}

	pg := signIn("pt-BR")
	if strings.Contains(pg.Header.Get("Content-Security-Policy"), "img-src") || !strings.Contains(pg.Body, `<html lang="en">`) ||
		!strings.Contains(pg.Body, ">"+auth.BuiltInPageTexts()["sign_in_title"]+"</h1>") {
		t.Fatalf("unbranded page: CSP %q body %s", pg.Header.Get("Content-Security-Policy"), pg.Body)
	}

	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"displayName": "Acme <Cloud>",
		"logoUrl": "https://cdn.acme.example:8443/brand/logo.svg", "accentColor": "#0a7f3e"}))
	wantOK(t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/pt", map[string]any{
		"sign_in_title": "Entrar", "email_label": "Endereço de e-mail", "continue_button": `<script>alert("x")</script>`}))
	wantOK(t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/de", map[string]any{"sign_in_title": "Anmelden"}))

	pg = signIn("pt-BR,en;q=0.5")
	csp := pg.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "; img-src https://cdn.acme.example:8443") || strings.Count(csp, "img-src") != 1 {
		t.Errorf("CSP %q, want img-src of the logo's origin alone", csp)
	}
	for _, want := range []string{`<html lang="pt">`, ">Entrar</h1>", ">Endereço de e-mail</label>",
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "Acme &lt;Cloud&gt;",
		`<img src="https://cdn.acme.example:8443/brand/logo.svg" alt="">`, ":root{--accent:#0a7f3e}",
		// A key pt does not word: the built-in English.
		auth.BuiltInPageTexts()["sign_in_text"]} {
		if !strings.Contains(pg.Body, want) {
			t.Errorf("pt-BR sign-in page lacks %q: %s", want, pg.Body)
		}
	}
	if strings.Contains(pg.Body, `<script>alert`) {
		t.Errorf("the uploaded markup is on the page unescaped")
	}

	pg = signIn("pt-BR", oauth2.SetAuthURLParam("ui_locales", "de-AT"))
	if !strings.Contains(pg.Body, `<html lang="de">`) || !strings.Contains(pg.Body, ">Anmelden</h1>") {
		t.Errorf("ui_locales de-AT with Accept-Language pt-BR: want German, got %s", pg.Body)
	}
	// The code page, a POST of the request's form, keeps its language.
	code := b.submit(pg, map[string]string{"email": "ada@example.com"})
	if code.Status != http.StatusOK || !strings.Contains(code.Body, `<html lang="de">`) {
		t.Errorf("code page after ui_locales de: %d %s", code.Status, code.Body)
	}

	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+pid+"/page-texts/pt", nil))
	pg = signIn("pt-BR")
	if !strings.Contains(pg.Body, `<html lang="en">`) || !strings.Contains(pg.Body, ">"+auth.BuiltInPageTexts()["sign_in_title"]+"</h1>") {
		t.Errorf("after DELETE pt, want English at once: %s", pg.Body)
	}
}

// TestForwardAuthAndAccountPagesBranded: the forward-auth sign-in page
// and the account page take the project's texts, language and logo.
func TestForwardAuthAndAccountPagesBranded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"displayName": "Acme",
		"logoUrl":     "https://cdn.acme.example/logo.png",
		"forwardAuth": map[string]any{"cookieDomain": "fa.localhost", "rules": []map[string]any{{"host": "app.fa.localhost", "policy": "signed_in"}}}}))
	wantOK(t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/fr", map[string]any{
		"sign_in_title": "Connexion", "account_title": "Votre compte"}))
	b := ts.newBrowser()
	get := func(u string) *webPage {
		t.Helper()
		req, err := http.NewRequest("GET", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Language", "fr-CA, en;q=0.8")
		return b.do(req)
	}
	pg := get(ts.issuer(pid) + auth.ForwardAuthSignInPath + "?rd=" + "http%3A%2F%2Fapp.fa.localhost%2F")
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `<html lang="fr">`) || !strings.Contains(pg.Body, ">Connexion</h1>") ||
		!strings.Contains(pg.Body, "<span>Acme</span>") || !strings.Contains(pg.Header.Get("Content-Security-Policy"), "img-src https://cdn.acme.example") {
		t.Fatalf("forward-auth sign-in page: %d CSP %q %s", pg.Status, pg.Header.Get("Content-Security-Policy"), pg.Body)
	}
	// Signed in, the account page.
	pg = b.submit(pg, map[string]string{"email": "ada@example.com"})
	pg = b.submit(pg, map[string]string{"code": ts.lastMail("ada@example.com").Code})
	pg = get(ts.issuer(pid) + auth.AccountPath)
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `<html lang="fr">`) || !strings.Contains(pg.Body, ">Votre compte</h1>") {
		t.Fatalf("account page: %d %s", pg.Status, pg.Body)
	}
	if csp := pg.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src data: https://cdn.acme.example") {
		t.Errorf("account page CSP %q, want data: and the logo's origin", csp)
	}
}
