package store_test

import (
	"errors"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestTemplates: mail templates round-trip exactly, list in (kind,
// locale) byte order per project, are replaced and deleted by key, and
// go with their project.
func TestTemplates(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	at := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	put := func(tx store.Tx, pid, kind, locale, subject string) error {
		return tx.PutTemplate(&store.Template{ProjectID: pid, Kind: kind, Locale: locale, Subject: subject,
			Text: "Código {{.Code}}\r\n", HTML: "<p>{{.Code}}</p>", UpdatedAt: at})
	}
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, id := range []string{"p", "p2", "pp"} {
			if err := tx.PutProject(&store.Project{ID: id, Name: id, CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, k := range [][3]string{{"p", "otp", "pt"}, {"p", "magic_link", "pt-BR"}, {"p", "otp", "en"}, {"p2", "otp", "pt"}, {"pp", "otp", "de"}} {
			if err := put(tx, k[0], k[1], k[2], "s "+k[2]); err != nil {
				return err
			}
		}
		return put(tx, "p", "otp", "pt", "replaced")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx store.Tx) error {
		got, err := tx.Template("p", "otp", "pt")
		if err != nil {
			return err
		}
		if got.Subject != "replaced" || got.Text != "Código {{.Code}}\r\n" || got.HTML != "<p>{{.Code}}</p>" || !got.UpdatedAt.Equal(at) ||
			got.ProjectID != "p" || got.Kind != "otp" || got.Locale != "pt" {
			t.Errorf("template=%+v", got)
		}
		if _, err := tx.Template("p", "otp", "pt-BR"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Template(missing)=%v, want ErrNotFound", err)
		}
		if _, err := tx.Template("p\x00", "otp", "pt"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Template(NUL)=%v, want ErrNotFound", err)
		}
		list, err := tx.Templates("p")
		if err != nil {
			return err
		}
		var keys []string
		for _, x := range list {
			keys = append(keys, x.Kind+"/"+x.Locale)
		}
		if want := "magic_link/pt-BR otp/en otp/pt"; join(keys) != want {
			t.Errorf("Templates(p)=%s, want %s", join(keys), want)
		}
		if none, err := tx.Templates("nope"); err != nil || none == nil || len(none) != 0 {
			t.Errorf("Templates(nope)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(tx store.Tx) error {
		if err := put(tx, "p", "otp", "fr", "x"); err == nil {
			t.Error("PutTemplate in a View succeeded")
		}
		return nil
	})
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.DeleteTemplate("p", "otp", "en"); err != nil {
			return err
		}
		if err := tx.DeleteTemplate("p", "otp", "en"); err != nil {
			return err // already gone: nil
		}
		_, err := tx.DeleteProject("p")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(tx store.Tx) error {
		for pid, want := range map[string]int{"p": 0, "p2": 1, "pp": 1} {
			if list, err := tx.Templates(pid); err != nil || len(list) != want {
				t.Errorf("Templates(%s) after DeleteProject(p)=%d %v, want %d", pid, len(list), err, want)
			}
		}
		return nil
	})
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// TestFactorSummaries: one call reports each user's factors with their
// statuses, its passkeys in the project and its backup codes.
func TestFactorSummaries(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	err := db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p", Name: "p", CreatedAt: at}); err != nil {
			return err
		}
		for _, id := range []string{"u1", "u2", "u3"} {
			if err := tx.PutUser(&store.User{ID: id, ProjectID: "p", Email: id + "@example.com", CreatedAt: at}); err != nil {
				return err
			}
		}
		if err := tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p", Kind: "totp", Status: "enrolled", CreatedAt: at}); err != nil {
			return err
		}
		if err := tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p", Kind: "sms", Status: "pending", Phone: "+15550100", CreatedAt: at}); err != nil {
			return err
		}
		if err := tx.PutBackupCodes(&store.BackupCodes{UserID: "u1", ProjectID: "p", CreatedAt: at}); err != nil {
			return err
		}
		return tx.PutPasskey(&store.Passkey{ProjectID: "p", ID: "cred", UserID: "u2", CreatedAt: at})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(tx store.Tx) error {
		got, err := tx.FactorSummaries("p", []string{"u1", "u2", "u3", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		u1 := got["u1"]
		if u1.Factors["totp"] != "enrolled" || u1.Factors["sms"] != "pending" || len(u1.Factors) != 2 || u1.Passkeys || !u1.BackupCodes {
			t.Errorf("u1=%+v", u1)
		}
		if u2 := got["u2"]; len(u2.Factors) != 0 || !u2.Passkeys || u2.BackupCodes {
			t.Errorf("u2=%+v", u2)
		}
		if u3 := got["u3"]; len(u3.Factors) != 0 || u3.Passkeys || u3.BackupCodes {
			t.Errorf("u3=%+v", u3)
		}
		if none, err := tx.FactorSummaries("p", nil); err != nil || none == nil {
			t.Errorf("FactorSummaries(none)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
}
