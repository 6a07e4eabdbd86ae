package httpapi

import (
	"regexp"
	"strings"
	"testing"
	"text/template/parse"
	"unicode"
)

// The guard of the pages' words: every text a hosted page shows comes
// from a text key. TestPageTemplatesHaveNoWords reads the templates
// themselves (every branch of every {{if}}); TestPagesWordedByKeys
// (page_words_test.go) renders the pages over HTTP with every key
// replaced by a marker, which also catches words the handlers would
// pass in.

// hiddenAttrs are the attributes whose values a page does not show
// (value is shown on a submit input only, which the pages do not use).
var hiddenAttrs = map[string]bool{
	"action": true, "aria-describedby": true, "aria-invalid": true, "autocapitalize": true, "autocomplete": true, "charset": true, "class": true, "content": true,
	"data-mode": true, "data-options": true, "for": true, "height": true, "href": true, "id": true, "inputmode": true,
	"lang": true, "method": true, "name": true, "nonce": true, "role": true, "spellcheck": true, "src": true,
	"type": true, "value": true, "width": true,
}

var (
	pageScript = regexp.MustCompile(`(?is)<(script|style)\b[^>]*>.*?</(script|style)>`)
	pageTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	pageAttr   = regexp.MustCompile(`([a-zA-Z-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?`)
)

// VisibleTexts returns what a browser shows of page, an HTML page or a
// template's text: its text between tags, outside scripts and styles,
// with entities decoded, and the values of the attributes it may show
// (alt, title, aria-label, placeholder, a script's data-* words...:
// every attribute but hiddenAttrs), each as one string.
func VisibleTexts(page string) []string {
	page = pageScript.ReplaceAllString(page, " ")
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(htmlText(s)); s != "" {
			out = append(out, s)
		}
	}
	last := 0
	for _, m := range pageTag.FindAllStringIndex(page, -1) {
		add(page[last:m[0]])
		last = m[1]
		tag := strings.TrimSuffix(strings.TrimPrefix(page[m[0]:m[1]], "<"), ">")
		if strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "/") {
			continue
		}
		_, attrs, _ := strings.Cut(tag, " ")
		for _, a := range pageAttr.FindAllStringSubmatch(attrs, -1) {
			if !hiddenAttrs[strings.ToLower(a[1])] {
				add(a[2] + a[3] + a[4])
			}
		}
	}
	add(page[last:])
	return out
}

// htmlText decodes the entities of an escaped text (the pages' escaping
// of text, undone).
func htmlText(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`, "&#43;", "+").Replace(s)
}

// wordless reports whether s has no letter: punctuation, digits, spaces.
func wordless(s string) bool {
	return strings.IndexFunc(s, unicode.IsLetter) < 0
}

// templateText returns a template's tree as a page would be written
// with every branch of it: its text, and an action's value as
// "\x01" (a value of the page's: a text of a key, or data).
func templateText(n parse.Node, b *strings.Builder) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				templateText(c, b)
			}
		}
	case *parse.TextNode:
		b.Write(n.Text)
	case *parse.ActionNode, *parse.TemplateNode:
		b.WriteString("\x01")
	case *parse.IfNode:
		templateText(n.List, b)
		templateText(n.ElseList, b)
	case *parse.RangeNode:
		templateText(n.List, b)
		templateText(n.ElseList, b)
	case *parse.WithNode:
		templateText(n.List, b)
		templateText(n.ElseList, b)
	}
}

// TestPageTemplatesHaveNoWords: no template of the hosted pages (the
// sign-in, code, second-factor, consent, device, sign-out, error and
// forward-auth pages' template, and the account page's with all its
// panels) has a word of its own in what a browser shows: every text is
// an action (a text key looked up, or a value). The scripts' words come
// from data-* attributes, which this reads as shown.
func TestPageTemplatesHaveNoWords(t *testing.T) {
	n := 0
	for _, set := range []*pageTemplate{oidcTmpl, accountTmpl} {
		for _, tmpl := range set.Templates() {
			if tmpl.Tree == nil || tmpl.Tree.Root == nil {
				continue
			}
			var b strings.Builder
			templateText(tmpl.Tree.Root, &b)
			for _, s := range VisibleTexts(b.String()) {
				n++
				if !wordless(strings.ReplaceAll(s, "\x01", "")) {
					t.Errorf("template %q shows words of its own: %q", tmpl.Name(), strings.ReplaceAll(s, "\x01", "{{…}}"))
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("the templates show %d texts, want the pages read", n)
	}
	// The guard itself: words in a text, in an alt and in a script's
	// data-* attribute are found; a value and hidden attributes are not.
	for page, want := range map[string]int{
		"<p>\x01 (not verified)</p>":                       1,
		`<img src="x" alt="A QR code">`:                    1,
		`<form data-failed="It failed" id="passkey">`:      1,
		`<input type="hidden" name="csrf" value="abc">`:    0,
		"<script>var s = \"Waiting\";</script><p>\x01</p>": 0,
	} {
		got := 0
		for _, s := range VisibleTexts(page) {
			if !wordless(strings.ReplaceAll(s, "\x01", "")) {
				got++
			}
		}
		if got != want {
			t.Errorf("VisibleTexts(%q): %d texts with words, want %d", page, got, want)
		}
	}
}

// TestScriptsHaveNoWords: the pages' scripts set no text of their own
// (a string with a space is a sentence): what they show comes from the
// page's data-* attributes, worded by key.
func TestScriptsHaveNoWords(t *testing.T) {
	literal := regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
	sentence := regexp.MustCompile(`[A-Za-z]+ +[A-Za-z]+`)
	n := 0
	for name, js := range map[string]string{"sign-in": passkeyScript, "account": accountPasskeyScript} {
		for _, s := range literal.FindAllString(js, -1) {
			n++
			if sentence.MatchString(s) {
				t.Errorf("the %s page's script has words of its own: %s", name, s)
			}
		}
	}
	if n < 10 || !sentence.MatchString(`"Waiting for your passkey"`) {
		t.Fatalf("read %d string literals of the scripts, want them read", n)
	}
}
