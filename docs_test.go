package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documentation is README.md and docs/*.md. These tests keep it
// honest: every relative link resolves to a file of the repository and,
// when it names an anchor, to a heading (or an explicit <a id>) of that
// file; and nothing points outside the repository, where a reader who has
// only the repository cannot follow.

// docFiles lists README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

var (
	fenceLine  = regexp.MustCompile("^\\s*(```|~~~)")
	headingRe  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	linkRe     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// proseLines returns the file's lines outside fenced code blocks, with
// their line numbers.
func proseLines(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fenceLine.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// slug is GitHub's anchor for a heading: the text as rendered (code
// marks, emphasis and link targets dropped), lowercased, every character
// that is not a letter, digit, mark, underscore, space or hyphen removed,
// spaces turned into hyphens.
func slug(heading string) string {
	h := mdLinkText.ReplaceAllString(heading, "$1")
	h = strings.NewReplacer("`", "", "*", "").Replace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor of a Markdown file: its headings' slugs
// (repeats numbered -1, -2, … as GitHub does) and explicit <a id>s.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(text)
	for _, l := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocLinks: every relative link of README.md and docs/*.md resolves,
// anchors included.
func TestDocLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, bool) {
		if a, ok := cache[path]; ok {
			return a, true
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, false
		}
		cache[path] = anchors(string(raw))
		return cache[path], true
	}
	links := 0
	for _, file := range docFiles(t) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines, numbers := proseLines(string(raw))
		for i, l := range lines {
			for _, m := range linkRe.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, "``"), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				path, frag, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", file, numbers[i], target, resolved)
					continue
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s:%d: link %q: an anchor in a file that is not Markdown", file, numbers[i], target)
					continue
				}
				a, _ := anchorsOf(resolved)
				if !a[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, numbers[i], target, resolved, frag)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found: is the link pattern broken?")
	}
}

// TestDocsSelfContained: the documentation, and the OpenAPI document the
// server serves, never point outside the repository (the internal
// specification files a reader does not have).
func TestDocsSelfContained(t *testing.T) {
	banned := []string{"../shared", "shared/", "interface.md", "decisions", "§", "the contract"}
	for _, file := range append(docFiles(t), "httpapi/openapi.json") {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range strings.Split(string(raw), "\n") {
			for _, b := range banned {
				if strings.Contains(strings.ToLower(l), strings.ToLower(b)) {
					t.Errorf("%s:%d: %q points outside the repository: %s", file, n+1, b, strings.TrimSpace(l))
				}
			}
		}
	}
}

// TestSlug pins the anchor rule to GitHub's for the kinds of heading the
// docs use.
func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Running":               "running",
		"POST /api/v1/otp/send": "post-apiv1otpsend",
		"GET, PATCH, DELETE /api/v1/admin/projects/:id": "get-patch-delete-apiv1adminprojectsid",
		"CORS (browser calls)":                          "cors-browser-calls",
		"The end user's address":                        "the-end-users-address",
		"`sk_live_` keys":                               "sk_live_-keys",
		"Health, readiness, metrics, OpenAPI, JWKS":     "health-readiness-metrics-openapi-jwks",
		"Step-up: TOTP, SMS, backup codes":              "step-up-totp-sms-backup-codes",
		"[Link](x.md) text":                             "link-text",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
