package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// Templates tests the mail templates (store.Templates).
func (s Suite) Templates(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.templatesRoundTrip}})
}

// templatesRoundTrip: templates round-trip exactly, are found by
// (project, kind, locale) only, list in (kind, locale) byte order per
// project (never nil), are replaced and deleted by key, and go with
// their project.
func (s Suite) templatesRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	tmpl := func(pid, kind, locale, subject string) *store.Template {
		return &store.Template{ProjectID: pid, Kind: kind, Locale: locale, Subject: subject,
			Text: "Código {{.Code}}\r\n", HTML: "<p>{{.Code}}</p>", UpdatedAt: at}
	}
	replaced := tmpl("p", "otp", "pt", "replaced")
	complete(t, replaced)
	update(t, db, func(tx store.Tx) error {
		for _, id := range []string{"p", "p2", "pp"} {
			if err := tx.PutProject(&store.Project{ID: id, Name: id, CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, k := range [][3]string{{"p", "otp", "pt"}, {"p", "magic_link", "pt-BR"}, {"p", "otp", "en"}, {"p2", "otp", "pt"}, {"pp", "otp", "de"}} {
			if err := tx.PutTemplate(tmpl(k[0], k[1], k[2], "s "+k[2])); err != nil {
				return err
			}
		}
		if err := tx.PutTemplate(&store.Template{ProjectID: "p", Kind: "welcome", Locale: "fr"}); err != nil {
			return err
		}
		return tx.PutTemplate(replaced)
	})
	view(t, db, func(tx store.Tx) error {
		got, err := tx.Template("p", "otp", "pt")
		if err != nil {
			return err
		}
		if err := diff("template", got, replaced); err != nil {
			return err
		}
		got, err = tx.Template("p", "welcome", "fr")
		if err != nil {
			return err
		}
		if err := diff("empty template", got, &store.Template{ProjectID: "p", Kind: "welcome", Locale: "fr"}); err != nil {
			return err
		}
		for _, k := range [][3]string{{"p", "otp", "pt-BR"}, {"p\x00", "otp", "pt"}, {"pp", "otp", "pt"}, {"p", "otp", "PT"}, {"p", "magic_link", "pt"}} {
			if _, err := tx.Template(k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("Template(%q)=%v, want ErrNotFound", k, err)
			}
		}
		list, err := tx.Templates("p")
		if err != nil {
			return err
		}
		var keys []string
		for _, x := range list {
			keys = append(keys, x.Kind+"/"+x.Locale)
		}
		if want := "magic_link/pt-BR otp/en otp/pt welcome/fr"; strings.Join(keys, " ") != want {
			return fmt.Errorf("Templates(p)=%s, want %s", strings.Join(keys, " "), want)
		}
		if err := diff("listed template", list[2], replaced); err != nil {
			return err
		}
		if none, err := tx.Templates("nope"); err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("Templates(nope)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Template("p", "otp", "pt")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"Template":        wantNotFound(tx.Template(bad, "otp", "pt")),
			"Template/locale": wantNotFound(tx.Template("p", "otp", bad)),
			"Templates":       wantNone(tx.Templates(bad)),
			"DeleteTemplate":  tx.DeleteTemplate(bad, bad, bad),
		}
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteTemplate("p", "otp", "en"); err != nil {
			return err
		}
		if err := tx.DeleteTemplate("p", "otp", "en"); err != nil {
			return fmt.Errorf("deleting a deleted template: %w", err)
		}
		if _, err := tx.Template("p", "otp", "en"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted template: %v", err)
		}
		_, err := tx.DeleteProject("p")
		return err
	})
	view(t, db, func(tx store.Tx) error {
		for pid, want := range map[string]int{"p": 0, "p2": 1, "pp": 1} {
			if list, err := tx.Templates(pid); err != nil || len(list) != want {
				return fmt.Errorf("Templates(%s) after DeleteProject(p)=%d %v, want %d", pid, len(list), err, want)
			}
		}
		return nil
	})
}
