package auth_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/storetest"
)

// Mail templates are rendered before the write transaction that queues
// the mail opens (mailbox.go), on the test backend.

// txCount is a store that counts the transaction functions running in
// it (View, Update and Batch alike).
type txCount struct {
	store.DB
	open atomic.Int32
}

func (c *txCount) View(ctx context.Context, fn func(store.Tx) error) error {
	return c.DB.View(ctx, c.counted(fn))
}

func (c *txCount) Update(ctx context.Context, fn func(store.Tx) error) error {
	return c.DB.Update(ctx, c.counted(fn))
}

func (c *txCount) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return c.DB.Batch(ctx, c.counted(fn))
}

func (c *txCount) counted(fn func(store.Tx) error) func(store.Tx) error {
	return func(tx store.Tx) error {
		c.open.Add(1)
		defer c.open.Add(-1)
		return fn(tx)
	}
}

// newCountedService is newTestService over a txCount of the test
// backend's store (keeping what else the store offers: store.Shared).
func newCountedService(t *testing.T) (*testService, *txCount) {
	t.Helper()
	db := storetest.Open(t)
	c := &txCount{DB: db}
	var wrapped store.DB = c
	if sh, ok := db.(store.Shared); ok {
		wrapped = struct {
			*txCount
			store.Shared
		}{c, sh}
	}
	return newTestServiceOver(t, wrapped), c
}

// putTemplate uploads a template of kind in locale for ts's project.
func (ts *testService) putTemplate(kind, locale, subject, text, html string) {
	ts.t.Helper()
	if _, err := ts.PutTemplate(ctx, ts.project.ID, kind, locale, auth.TemplateInput{Subject: &subject, Text: &text, HTML: &html}); err != nil {
		ts.t.Fatalf("put %s/%s: %v", kind, locale, err)
	}
}

// TestTemplatesRenderOutsideTransactions: every render of a project's
// template (the four sends, the upload's check, the preview) runs while
// no transaction is open, and a send of another project completes while
// a render is held: with the render inside the write transaction, it
// would wait for the writer (bbolt has one) and this test would fail.
func TestTemplatesRenderOutsideTransactions(t *testing.T) {
	t.Parallel()
	ts, count := newCountedService(t)
	other, err := ts.CreateProject(ctx, auth.ProjectInput{Name: ptr("Other")})
	ok(t, err)
	var renders atomic.Int32
	var during func() // run inside the next render, once
	auth.SetOnRender(ts.Service, func() {
		renders.Add(1)
		if n := count.open.Load(); n != 0 {
			t.Errorf("a template render ran with %d transactions open", n)
		}
		if f := during; f != nil {
			during = nil
			f()
		}
	})
	ts.putTemplate("otp", "en", "Code for {{.Project}}", "Code {{.Code}}", "<p>{{.Code}}</p>")
	ts.putTemplate("magic_link", "en", "Link for {{.Project}}", "Link {{.Link}}", `<a href="{{.Link}}">in</a>`)
	ts.putTemplate("email_change", "en", "Confirm {{.Email}}", "Code {{.Code}}", "<p>{{.Code}}</p>")
	ts.putTemplate("email_changed_notice", "en", "Changed", "{{.Email}} was replaced.", "<p>{{.Email}}</p>")

	// Project B's send completes while project A's render is held.
	during = func() {
		done := make(chan error, 1)
		go func() { done <- ts.SendOTP(ctx, other, "b@example.com", ts.meta) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("project B's send: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("project B's send waited for project A's render")
		}
	}
	ok(t, ts.SendOTP(ctx, ts.project, "a@example.com", ts.meta))
	if during != nil {
		t.Fatal("the OTP send rendered nothing")
	}
	if m := ts.lastMail("a@example.com", "otp"); m.Content.Subject != "Code for "+ts.project.Name {
		t.Fatalf("otp mail=%+v, want the template's", m.Content)
	}
	if m := ts.lastMail("b@example.com", "otp"); m.Content.Code == "" || m.Content.Subject != "" {
		t.Fatalf("project B's mail=%+v, want the built-in with a code", m.Content)
	}

	steps := []struct {
		name string
		run  func() error
	}{
		{"magic link", func() error { return ts.SendMagicLink(ctx, ts.project, "a@example.com", "", ts.meta) }},
		{"address change code", func() error {
			_, pr := ts.signIn("c@example.com")
			_, err := ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("new@example.com")}, ts.meta)
			if err != nil {
				return err
			}
			// The notice to the old address, rendered between two runs.
			_, err = ts.VerifyAddress(ctx, pr, ts.lastMail("new@example.com", "email_change").Content.Code, ts.meta)
			return err
		}},
		{"current address code", func() error {
			_, pr := ts.signIn("d@example.com")
			return ts.SendAddressCode(ctx, pr, ts.meta)
		}},
		{"preview", func() error {
			_, err := ts.PreviewTemplate(ctx, ts.project.ID, "otp", "en", auth.TemplateInput{})
			return err
		}},
		{"upload", func() error {
			s := "x {{.Project}}"
			_, err := ts.PutTemplate(ctx, ts.project.ID, "otp", "pt", auth.TemplateInput{Subject: &s, Text: ptr("{{.Code}}"), HTML: ptr("<p>{{.Code}}</p>")})
			return err
		}},
	}
	for _, s := range steps {
		before := renders.Load()
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if renders.Load() == before {
			t.Fatalf("%s rendered no template", s.name)
		}
	}
	if m := ts.lastMail("c@example.com", "email_changed_notice"); m.Content.Subject != "Changed" || m.Content.Text != "c@example.com was replaced." {
		t.Fatalf("notice=%+v", m.Content)
	}
	if m := ts.lastMail("d@example.com", "email_change"); m.Content.Subject != "Confirm d@example.com" {
		t.Fatalf("address code=%+v", m.Content)
	}
}

// TestTemplateContentChangedBeforeCommit: a project renamed between the
// render and the transaction gets the mail rendered again with the new
// name; one renamed at every render gets the built-in wording, with the
// name the transaction read.
func TestTemplateContentChangedBeforeCommit(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	ts.putTemplate("email_change", "en", "Confirm for {{.Project}}", "Code {{.Code}}", "<p>{{.Code}}</p>")
	_, pr := ts.signIn("a@example.com")
	rename := func(name string) {
		if _, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{Name: ptr(name)}); err != nil {
			t.Errorf("rename: %v", err)
		}
	}

	renders := 0
	auth.SetOnRender(ts.Service, func() {
		if renders++; renders == 1 {
			rename("Renamed once")
		}
	})
	ok(t, ts.SendAddressCode(ctx, pr, ts.meta))
	if m := ts.lastMail("a@example.com", "email_change"); m.Content.Subject != "Confirm for Renamed once" || m.Content.Project != "Renamed once" {
		t.Fatalf("mail=%+v, want it rendered again with the new name", m.Content)
	}
	if renders != 2 {
		t.Fatalf("renders=%d, want 2", renders)
	}

	ts.clock.Advance(auth.SendInterval)
	renders = 0
	auth.SetOnRender(ts.Service, func() {
		renders++
		rename("Renamed " + strings.Repeat("again ", renders))
	})
	ok(t, ts.SendAddressCode(ctx, pr, ts.meta))
	m := ts.lastMail("a@example.com", "email_change")
	if m.Content.Subject != "" || m.Content.Project != "Renamed "+strings.TrimSpace(strings.Repeat("again ", renders)) || m.Content.Code == "" {
		t.Fatalf("mail=%+v after %d renders, want the built-in with the last name", m.Content, renders)
	}
}

// TestTemplateBadAtSendTime: a stored template that breaks the rules
// (as an older version could store it: a range over a number) is not
// run at send time; the built-in English is sent, at once.
func TestTemplateBadAtSendTime(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	ok(t, ts.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutTemplate(&store.Template{ProjectID: ts.project.ID, Kind: "otp", Locale: "en",
			Subject: "s", Text: "{{.Code}}{{range 100000000}}x{{end}}", HTML: "<p>{{.Code}}</p>", UpdatedAt: start})
	}))
	ok(t, ts.SendOTP(ctx, ts.project, "a@example.com", ts.meta))
	if m := ts.lastMail("a@example.com", "otp"); m.Content.Subject != "" || m.Content.Locale != "" || m.Content.Code == "" {
		t.Fatalf("mail=%+v, want the built-in", m.Content)
	}
	pv, err := ts.PreviewTemplate(ctx, ts.project.ID, "otp", "en", auth.TemplateInput{})
	ok(t, err)
	if !pv.BuiltIn || pv.Locale != "" || !strings.Contains(pv.Subject, "code") || !strings.Contains(pv.HTML, "<") {
		t.Fatalf("preview=%+v, want the built-in, rendered", pv)
	}
}
