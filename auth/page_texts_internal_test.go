package auth

import (
	"latchkey/internal/testkit"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestPageTextKeysDocumented: docs/oidc.md lists every text key of the
// hosted pages with its built-in English.
func TestPageTextKeysDocumented(t *testing.T) {
	testkit.EngineFree(t, "compares the page texts with the docs")
	doc, err := os.ReadFile("../docs/oidc.md")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range BuiltInPageTexts() {
		if !strings.Contains(string(doc), "| `"+k+"` | "+v+" |") {
			t.Errorf("docs/oidc.md lacks the row of %s: | `%s` | %s |", k, k, v)
		}
	}
}

// TestPageLocaleChain: ui_locales first, then Accept-Language, each tag
// with its parents, then en; bad tags are skipped.
func TestPageLocaleChain(t *testing.T) {
	testkit.EngineFree(t, "computes locale chains")
	for _, c := range []struct {
		ui     []string
		accept string
		want   []string
	}{
		{nil, "", []string{"en"}},
		{nil, "pt-BR,en;q=0.5", []string{"pt-BR", "pt", "en"}},
		{[]string{"de-AT"}, "pt-BR", []string{"de-AT", "de", "pt-BR", "pt", "en"}},
		{[]string{"not a tag!", "fr"}, "garbage;;", []string{"fr", "en"}},
		{[]string{"en-GB"}, "en", []string{"en-GB", "en-001", "en"}}, // x/text: en-GB's parent is en-001
	} {
		if got := pageLocaleChain(c.ui, c.accept); !reflect.DeepEqual(got, c.want) {
			t.Errorf("pageLocaleChain(%q, %q) = %q, want %q", c.ui, c.accept, got, c.want)
		}
	}
}
