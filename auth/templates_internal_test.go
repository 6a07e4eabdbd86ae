package auth

import (
	"testing"
	"unicode/utf8"

	"latchkey/store"
)

// TestTemplateSamplesAreReal: the sample sets' longest values are the
// longest a send carries (a project name of 100 characters, an address
// of MaxEmailLength), and every set's values are ones a send could carry.
func TestTemplateSamplesAreReal(t *testing.T) {
	t.Parallel()
	if n := utf8.RuneCountInString(longProject); n != 100 {
		t.Fatalf("longest project name: %d characters, want 100", n)
	}
	if len(longEmail) != MaxEmailLength {
		t.Fatalf("longest address: %d bytes, want %d", len(longEmail), MaxEmailLength)
	}
	for _, kind := range TemplateKinds {
		for _, s := range samples("Acme", kind) {
			d := s.data
			var p store.Project
			if err := (&ProjectInput{Name: &d.Project}).apply(&p); err != nil || p.Name != d.Project {
				t.Errorf("%s %q: project name %q: %v", kind, s.name, d.Project, err)
			}
			if e, err := NormalizeEmail(d.Email); err != nil || e != d.Email {
				t.Errorf("%s %q: address %q: %v", kind, s.name, d.Email, err)
			}
			if (d.Code != "") != (kind == "otp" || kind == "email_change") || (d.Link != "") != (kind == "magic_link") {
				t.Errorf("%s %q: code %q, link %q: not the kind's fields", kind, s.name, d.Code, d.Link)
			}
		}
	}
}
