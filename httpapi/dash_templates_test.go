package httpapi_test

import (
	"html"
	"net/url"
	"strings"
	"testing"
)

// TestDashboardTemplates: the dashboard edits a template with a preview
// on sample data, shows a refused template with its line, saves, and
// deletes after a confirmation.
func TestDashboardTemplates(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := newDashClient(t, ts)
	_, body := c.post("/admin/login", url.Values{"token": {testAdminToken}})
	csrf := csrfField.FindStringSubmatch(body)[1]
	path := "/admin/projects/" + ts.Project.ID + "/templates"
	code, body := c.get(path)
	if code != 200 || !strings.Contains(body, "No templates") || !strings.Contains(body, `class="on">Mail templates</a>`) {
		t.Fatalf("templates page: %d\n%s", code, body)
	}
	form := url.Values{"csrf": {csrf}, "kind": {"otp"}, "locale": {"pt-br"}, "subject": {"Código {{.Project}}"},
		"text": {"Código: {{.Code}}"}, "html": {"<p>{{.Email}} <b>{{.Code}}</b></p>"}, "do": {"preview"}}
	code, body = c.post(path, form)
	if code != 200 || !strings.Contains(body, `<pre id="preview-text">Código: 123456</pre>`) ||
		!strings.Contains(html.UnescapeString(body), "<p>ada@example.com <b>123456</b></p>") {
		t.Fatalf("preview: %d\n%s", code, body)
	}
	if items, _ := ts.admin("GET", tmplPath(ts, ""), nil).Body["templates"].([]any); len(items) != 0 {
		t.Fatal("a preview stored the template")
	}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("text", "one\n{{.Code}\n")
	bad.Set("do", "save")
	code, body = c.post(path, bad)
	if code != 400 || !strings.Contains(body, "text: line 2") || !strings.Contains(body, "one\n{{.Code}\n") {
		t.Fatalf("refused save: %d\n%s", code, body)
	}
	form.Set("do", "save")
	code, body = c.post(path, form)
	if code != 200 || !strings.Contains(body, "Template otp pt-BR saved.") || !strings.Contains(body, `value="Código {{.Project}}"`) {
		t.Fatalf("save: %d\n%s", code, body)
	}
	if r := ts.admin("POST", tmplPath(ts, "/otp/pt/preview"), nil); r.Body["builtIn"] != true {
		t.Fatal("pt has no template: its preview is the built-in")
	}
	if r := ts.admin("POST", tmplPath(ts, "/otp/pt-BR/preview"), nil); r.Body["subject"] != "Código "+ts.Project.Name {
		t.Fatalf("saved template: %s", r.Raw)
	}
	code, body = c.get(path + "/otp/pt-BR/delete")
	if code != 200 || !strings.Contains(body, "Delete the otp template for pt-BR?") {
		t.Fatalf("confirm page: %d\n%s", code, body)
	}
	code, body = c.post(path+"/otp/pt-BR/delete", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if code != 200 || !strings.Contains(body, "Template otp pt-BR deleted.") || !strings.Contains(body, "No templates") {
		t.Fatalf("delete: %d\n%s", code, body)
	}
	if code, _ := c.get(path + "/otp/pt-BR/delete"); code != 404 {
		t.Fatalf("confirm page of a deleted template: %d, want 404", code)
	}
}
