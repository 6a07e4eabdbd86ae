package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/mail"
	"latchkey/store"
)

// Mail templates, over real HTTP on the test
// backend.

func tmplPath(ts *testServer, rest string) string {
	return "/api/v1/admin/projects/" + ts.Project.ID + "/templates" + rest
}

func otpTemplate(subject string) map[string]any {
	return map[string]any{
		"subject": subject,
		"text":    "Olá {{.Email}}, o seu código para {{.Project}} é {{.Code}} ({{.ExpiresInMinutes}} minutos).\n",
		"html":    "<p>Olá {{.Email}}, código para <b>{{.Project}}</b>: {{.Code}}</p>",
	}
}

// TestTemplatesAdmin: upload, list, preview (stored, fallback, built-in,
// draft), delete, and the errors of each.
func TestTemplatesAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.admin("PUT", tmplPath(ts, "/otp/pt"), otpTemplate("Código {{.Project}}"))
	wantOK(t, r)
	tpl := obj(t, r.Body, "template")
	if tpl["kind"] != "otp" || tpl["locale"] != "pt" || tpl["subject"] != "Código {{.Project}}" {
		t.Fatalf("template=%v", tpl)
	}
	// The locale is stored in canonical form.
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/magic_link/pt-br"), map[string]any{
		"subject": "Entrar", "text": "Link: {{.Link}}\n", "html": `<a href="{{.Link}}">Entrar</a>`}))

	list := ts.admin("GET", tmplPath(ts, ""), nil)
	wantOK(t, list)
	items, _ := list.Body["templates"].([]any)
	if len(items) != 2 {
		t.Fatalf("templates=%v, want 2", list.Body["templates"])
	}
	if first := items[0].(map[string]any); first["kind"] != "magic_link" || first["locale"] != "pt-BR" {
		t.Fatalf("first template=%v, want magic_link pt-BR (kind order)", first)
	}

	cases := []struct {
		name, path   string
		body         any
		locale       any
		builtIn      bool
		subject, has string
	}{
		{"stored", "/otp/pt/preview", nil, "pt", false, "Código " + ts.Project.Name, "123456"},
		{"fallback pt-BR to pt", "/otp/pt-BR/preview", map[string]any{}, "pt", false, "Código " + ts.Project.Name, "123456"},
		{"built-in", "/otp/de/preview", nil, nil, true, "Your " + ts.Project.Name + " sign-in code", "123456"},
		{"built-in notice", "/email_changed_notice/en/preview", nil, nil, true, "Your " + ts.Project.Name + " email address was changed", "changed"},
		{"draft", "/email_change/fr/preview", map[string]any{"subject": "Confirmez", "text": "Code : {{.Code}}", "html": "<p>{{.Code}}</p>"}, "fr", false, "Confirmez", "123456"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.admin("POST", tmplPath(ts, c.path), c.body)
			wantOK(t, r)
			if got := r.Body["locale"]; got != c.locale {
				t.Errorf("locale=%v, want %v", got, c.locale)
			}
			if got := r.Body["builtIn"]; got != c.builtIn {
				t.Errorf("builtIn=%v, want %v", got, c.builtIn)
			}
			if got := str(t, r.Body, "subject"); got != c.subject {
				t.Errorf("subject=%q, want %q", got, c.subject)
			}
			if got := str(t, r.Body, "text"); !strings.Contains(got, c.has) {
				t.Errorf("text=%q, want it to hold %q", got, c.has)
			}
			if str(t, r.Body, "html") == "" {
				t.Errorf("html empty")
			}
		})
	}
	// The draft was not stored.
	if items, _ := ts.admin("GET", tmplPath(ts, ""), nil).Body["templates"].([]any); len(items) != 2 {
		t.Fatalf("templates after a draft preview=%d, want 2", len(items))
	}

	wantOK(t, ts.admin("DELETE", tmplPath(ts, "/otp/pt"), nil))
	wantError(t, ts.admin("DELETE", tmplPath(ts, "/otp/pt"), nil), 404, "TEMPLATE_NOT_FOUND")
	if r := ts.admin("POST", tmplPath(ts, "/otp/pt/preview"), nil); r.Body["builtIn"] != true {
		t.Fatalf("preview after delete: %s, want the built-in", r.Raw)
	}

	nope := "/api/v1/admin/projects/nope/templates"
	wantError(t, ts.admin("GET", nope, nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("PUT", nope+"/otp/en", otpTemplate("x")), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("POST", nope+"/otp/en/preview", nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("DELETE", nope+"/otp/en", nil), 404, "PROJECT_NOT_FOUND")
	wantError(t, ts.admin("PUT", tmplPath(ts, "/sms/en"), otpTemplate("x")), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("PUT", tmplPath(ts, "/otp/not_a_locale!"), otpTemplate("x")), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("DELETE", tmplPath(ts, "/otp/xx-!!"), nil), 400, "VALIDATION_ERROR")
	wantError(t, ts.admin("PUT", tmplPath(ts, "/otp/en"), map[string]any{"subject": "s", "text": "{{.Code}}", "html": "h", "extra": 1}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("PUT", tmplPath(ts, "/otp/en"), "", otpTemplate("x")), 401, "UNAUTHORIZED")
}

// TestTemplateValidation: a template that does not parse or fails on
// sample data is 400 VALIDATION_ERROR naming the part and the line, and
// nothing is stored.
func TestTemplateValidation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	good := otpTemplate("Código")
	with := func(part, v string) map[string]any {
		m := map[string]any{}
		for k, x := range good {
			m[k] = x
		}
		if v == "\x00absent" {
			delete(m, part)
		} else {
			m[part] = v
		}
		return m
	}
	cases := []struct {
		name, kind string
		body       map[string]any
		want       string
	}{
		{"text does not parse", "otp", with("text", "first line\n{{.Code}\n"), "text: line 2"},
		{"html does not parse", "otp", with("html", "<p>\n\n{{if .Code}}</p>"), "html: line"},
		{"subject unknown field", "otp", with("subject", "{{.Nope}}"), "subject: line 1"},
		{"text unknown field on line 3", "otp", with("text", "a\nb\n{{.Code}} {{.Secret}}"), "text: line 3"},
		{"html fails on sample data", "otp", with("html", "{{index .Code 99}}"), "html: line 1"},
		{"text without the code", "otp", with("text", "Hello {{.Email}}"), "{{.Code}}"},
		{"magic text without the link", "magic_link", map[string]any{"subject": "s", "text": "click", "html": `<a href="{{.Link}}">x</a>`}, "{{.Link}}"},
		{"part missing", "otp", with("html", "\x00absent"), "html is required"},
		{"subject renders empty", "otp", with("subject", "{{if false}}x{{end}}"), "subject renders empty"},
		// Work that could grow past the source: loops, template calls,
		// built strings and output past 256 KiB.
		{"range over a number", "otp", with("text", "{{.Code}}{{range 100000000}}x{{end}}"), "text: line 1: range is not allowed"},
		{"range over a field", "otp", with("html", "<p>{{.Code}}</p>\n{{range .ExpiresInMinutes}}x{{end}}"), "html: line 2: range is not allowed"},
		{"template call", "otp", with("subject", `{{define "s"}}x{{end}}{{template "s"}}`), "subject: line 1: template and block are not allowed"},
		{"block", "otp", with("text", `{{.Code}}{{block "b" .}}{{.Code}}{{end}}`), "text: line 1: template and block are not allowed"},
		{"define", "otp", with("html", `<p>{{.Code}}</p>{{define "x"}}y{{end}}`), "html: define is not allowed"},
		{"output past 256 KiB", "otp", with("text", "{{.Code}}"+strings.Repeat("x", 60000)+`{{printf "%210000s" ""}}`), "text renders more than 256 KiB."},
		{"strings built past 256 KiB", "otp", with("text", `{{.Code}}{{if printf "%200000s" ""}}{{end}}{{if printf "%200000s" ""}}{{end}}`), "text: line 1: error calling printf: the strings built by printf"},
		{"a string doubled", "otp", with("text", "{{.Code}}{{$x := .Email}}"+strings.Repeat("{{$x = printf `%s%s` $x $x}}", 20)), "pass 256 KiB"},
		{"past 256 KiB with the longest values only", "otp", with("text", "{{.Code}}"+strings.Repeat("{{.Project}}", 5000)), "text renders more than 256 KiB (on the sample with the longest values)."},
		{"fails on another sample", "otp", with("html", `{{if eq .Code "123456"}}{{.Code}}{{else}}{{index .Code 99}}{{end}}`), "html: line 1: error calling index: index out of range: 99 (on the sample with the longest values)."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.admin("PUT", tmplPath(ts, "/"+c.kind+"/en"), c.body)
			wantError(t, r, 400, "VALIDATION_ERROR")
			if msg := str(t, r.Body, "error"); !strings.Contains(msg, c.want) {
				t.Fatalf("error=%q, want it to hold %q", msg, c.want)
			}
			// A draft preview checks the same way.
			wantError(t, ts.admin("POST", tmplPath(ts, "/"+c.kind+"/en/preview"), c.body), 400, "VALIDATION_ERROR")
		})
	}
	if items, _ := ts.admin("GET", tmplPath(ts, ""), nil).Body["templates"].([]any); len(items) != 0 {
		t.Fatalf("templates=%v, want none stored", items)
	}
	// The notice has no code and no link: any text will do.
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/email_changed_notice/en"), map[string]any{"subject": "Changed", "text": "Your address changed.", "html": "<p>changed</p>"}))
}

// TestTemplateSend: a send picks the template by the body's locale, else
// Accept-Language, with the BCP 47 fallback to the built-in English; the
// HTML part escapes values; the raw message holds the code in its text
// part.
func TestTemplateSend(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"name": "Acme <b>&</b>"}))
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/otp/pt"), otpTemplate("Código {{.Project}}")))
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/magic_link/fr"), map[string]any{
		"subject": "Connexion à {{.Project}}", "text": "Lien : {{.Link}}\n", "html": `<a href="{{.Link}}">{{.Project}}</a>`}))

	send := func(path string, body map[string]any, acceptLanguage string) {
		t.Helper()
		ts.Clock.Advance(31 * time.Second)
		req := jsonRequest(t, ts, "POST", path, body)
		if acceptLanguage != "" {
			req.Header.Set("Accept-Language", acceptLanguage)
		}
		wantOK(t, ts.send(req))
	}
	cases := []struct {
		name, locale, acceptLanguage, wantLocale string
	}{
		{"body locale pt-BR falls back to pt", "pt-BR", "", "pt"},
		{"body locale wins over the header", "pt", "de-DE", "pt"},
		{"Accept-Language", "", "de-DE;q=0.5, pt-PT;q=0.9", "pt"},
		{"unknown locale: built-in", "de", "", ""},
		{"no locale: built-in", "", "", ""},
		{"malformed header: built-in", "", "!!;q=x", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := "user" + string(rune('a'+i)) + "@example.com"
			body := map[string]any{"email": addr}
			if c.locale != "" {
				body["locale"] = c.locale
			}
			send("/api/v1/otp/send", body, c.acceptLanguage)
			m := ts.lastMail(addr)
			if m.Locale != c.wantLocale {
				t.Fatalf("locale=%q, want %q", m.Locale, c.wantLocale)
			}
			msg, err := mail.Render("otp", addr, "latchkey@example.com", m)
			if err != nil {
				t.Fatal(err)
			}
			raw := string(msg.Bytes())
			if !strings.Contains(raw, m.Code) {
				t.Fatalf("raw message lacks the code %s:\n%s", m.Code, raw)
			}
			if c.wantLocale == "" {
				if !strings.HasPrefix(msg.Subject, "Your Acme") {
					t.Fatalf("subject=%q, want the built-in", msg.Subject)
				}
				return
			}
			if msg.Subject != "Código Acme <b>&</b>" {
				t.Errorf("subject=%q", msg.Subject)
			}
			if !strings.Contains(msg.Text, "Olá "+addr) || !strings.Contains(msg.Text, "(10 minutos)") {
				t.Errorf("text=%q", msg.Text)
			}
			if !strings.Contains(msg.HTML, "<b>Acme &lt;b&gt;&amp;&lt;/b&gt;</b>") {
				t.Errorf("html=%q, want the project's name escaped", msg.HTML)
			}
		})
	}

	send("/api/v1/magic/send", map[string]any{"email": "link@example.com", "locale": "fr-CA"}, "")
	m := ts.lastMail("link@example.com")
	if m.Locale != "fr" || m.Subject != "Connexion à Acme <b>&</b>" || !strings.Contains(m.Text, m.Link) || !strings.Contains(m.HTML, `href="`+strings.ReplaceAll(m.Link, "&", "&amp;")) {
		t.Fatalf("magic link mail=%+v", m)
	}

	// Address change and the notice to the old address: the session's
	// calls take the locale too.
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/email_change/pt"), map[string]any{"subject": "Confirme", "text": "Código: {{.Code}}", "html": "<p>{{.Code}}</p>"}))
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/email_changed_notice/pt"), map[string]any{"subject": "Endereço alterado", "text": "O endereço de {{.Email}} mudou.", "html": "<p>{{.Email}}</p>"}))
	tok := str(t, ts.login("old@example.com").Body, "token")
	req := jsonRequest(t, ts, "PATCH", "/api/v1/user", map[string]any{"email": "new@example.com"})
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept-Language", "pt-BR")
	wantOK(t, ts.send(req))
	c := ts.lastMail("new@example.com")
	if c.Subject != "Confirme" || c.Text != "Código: "+c.Code {
		t.Fatalf("address code mail=%+v", c)
	}
	req = jsonRequest(t, ts, "POST", "/api/v1/user/email/verify", map[string]any{"code": c.Code, "locale": "pt"})
	req.Header.Set("Authorization", "Bearer "+tok)
	wantOK(t, ts.send(req))
	n := ts.lastMailOf("old@example.com", "email_changed_notice")
	if n.Subject != "Endereço alterado" || n.Text != "O endereço de old@example.com mudou." {
		t.Fatalf("notice=%+v", n)
	}
}

// TestTemplatesGoWithProject: deleting a project deletes its templates.
func TestTemplatesGoWithProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/otp/pt"), otpTemplate("x")))
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+ts.Project.ID, nil))
	ts.DB.View(ctx, func(tx store.Tx) error {
		ts, err := tx.Templates(ts.Project.ID)
		if err != nil || len(ts) != 0 {
			t.Errorf("templates after DeleteProject: %v %v", ts, err)
		}
		return nil
	})
}

// jsonRequest builds a request with a JSON body and the project's API
// key.
func jsonRequest(t *testing.T, ts *testServer, method, path string, body any) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(mustJSON(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	return req
}
