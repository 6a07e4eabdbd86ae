package httpapi

import (
	"latchkey/internal/testkit"
	"regexp"
	"testing"

	"latchkey/auth"
)

// TestPageTemplatesUseKnownKeys: every text a page template looks up
// ({{.T.key}}, {{$.T.key}}, fill of a key) is a key of the built-in
// texts, so none renders empty; and the templates do look texts up.
func TestPageTemplatesUseKnownKeys(t *testing.T) {
	testkit.EngineFree(t, "parses the page templates")
	used := regexp.MustCompile(`\.T\.([A-Za-z0-9_]+)`)
	n := 0
	for _, tmpl := range append(oidcTmpl.Templates(), accountTmpl.Templates()...) {
		if tmpl.Tree == nil {
			continue
		}
		for _, m := range used.FindAllStringSubmatch(tmpl.Tree.Root.String(), -1) {
			n++
			if _, ok := auth.BuiltInPageTexts()[m[1]]; !ok {
				t.Errorf("template %q looks up %q, which is no text key", tmpl.Name(), m[1])
			}
		}
	}
	if n < 20 {
		t.Fatalf("the templates look up %d texts, want the pages' texts looked up", n)
	}
}
