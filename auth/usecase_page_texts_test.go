package auth_test

import (
	"encoding/json"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// Page texts and branding without HTTP: what a hosted page looks like
// for a locale chain, fallback key by key, and changes seen at once.

// TestPageLookFallsBackKeyByKey: a pt-BR request takes pt-BR's texts,
// then pt's for the keys pt-BR leaves out, then the project's en, then
// the built-in; ui_locales come before Accept-Language; lang is the
// first locale with texts; branding shows; a PUT or DELETE shows on the
// next look (the cache is dropped).
func TestPageLookFallsBackKeyByKey(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	put := func(locale string, texts map[string]string) {
		t.Helper()
		raw, _ := json.Marshal(texts)
		_, err := ts.PutPageTexts(ctx, pid, locale, raw)
		ok(t, err)
	}
	look := func(authRequestID, accept string) *auth.PageLook {
		t.Helper()
		l, err := ts.PageLook(ctx, pid, authRequestID, accept)
		ok(t, err)
		return l
	}
	if l := look("", "pt-BR"); l.Lang != "en" || l.Texts["sign_in_title"] != auth.BuiltInPageTexts()["sign_in_title"] || l.Name != ts.project.Name {
		t.Fatalf("before any upload: %+v", l)
	}
	put("pt", map[string]string{"sign_in_title": "Entrar", "continue_button": "Continuar"})
	put("pt-BR", map[string]string{"sign_in_title": "Acessar"})
	put("en", map[string]string{"code_label": "One-time code"})
	l := look("", "pt-BR, de;q=0.5")
	for k, want := range map[string]string{"sign_in_title": "Acessar", "continue_button": "Continuar", "code_label": "One-time code",
		"email_label": auth.BuiltInPageTexts()["email_label"]} {
		if got := l.Texts[k]; got != want {
			t.Errorf("pt-BR %s=%q, want %q", k, got, want)
		}
	}
	if l.Lang != "pt-BR" {
		t.Errorf("lang=%q, want pt-BR", l.Lang)
	}
	if l := look("", "fr"); l.Lang != "en" || l.Texts["code_label"] != "One-time code" || l.Texts["sign_in_title"] != auth.BuiltInPageTexts()["sign_in_title"] {
		t.Errorf("fr: lang %q, texts %v", l.Lang, l.Texts["sign_in_title"])
	}
	ok(t, ts.DeletePageTexts(ctx, pid, "pt-BR"))
	if l := look("", "pt-BR"); l.Lang != "pt" || l.Texts["sign_in_title"] != "Entrar" {
		t.Errorf("after deleting pt-BR: lang %q, sign_in_title %q, want pt's", l.Lang, l.Texts["sign_in_title"])
	}
	wantErr(t, ts.DeletePageTexts(ctx, pid, "pt-BR"), auth.ErrPageTextsNotFound, "")
	_, err := ts.PageTexts(ctx, pid, "pt-BR")
	wantErr(t, err, auth.ErrPageTextsNotFound, "")
	_, err = ts.PutPageTexts(ctx, pid, "de", json.RawMessage(`{"sign_in_title":"Anmelden","nope":"x"}`))
	if e := wantErr(t, err, auth.ErrValidation, ""); e.Message == "" {
		t.Fatal("no message")
	}

	// ui_locales of the authorization request come first.
	put("de", map[string]string{"sign_in_title": "Anmelden"})
	ok(t, ts.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutOIDCAuthRequest(&store.OIDCAuthRequest{ID: "ar-1", ProjectID: pid, ClientID: "c", UILocales: []string{"de-CH"},
			CreatedAt: ts.clock.Now(), ExpiresAt: ts.clock.Now().Add(10 * time.Minute)})
	}))
	if l := look("ar-1", "pt"); l.Lang != "de" || l.Texts["sign_in_title"] != "Anmelden" || l.Texts["continue_button"] != "Continuar" {
		t.Errorf("ui_locales de-CH, Accept-Language pt: lang %q, %q / %q", l.Lang, l.Texts["sign_in_title"], l.Texts["continue_button"])
	}

	// Branding.
	_, err = ts.UpdateProject(ctx, pid, auth.ProjectInput{DisplayName: ptr("Acme"), LogoURL: ptr("https://cdn.example.com:8443/a/logo.svg"), AccentColor: ptr("#ABCDEF")})
	ok(t, err)
	if l := look("", ""); l.Name != "Acme" || l.LogoOrigin != "https://cdn.example.com:8443" || l.Accent != "#abcdef" {
		t.Errorf("branding: %+v", l)
	}
	ok(t, ts.DeleteProject(ctx, pid))
	if l := look("", "pt"); l.Lang != "en" || l.Name != "" {
		t.Errorf("deleted project: %+v, want the built-in look", l)
	}
}
