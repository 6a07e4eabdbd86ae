package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"latchkey/internal/testkit"
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
	t.Parallel()
	testkit.EngineFree(t, "checks the docs' links")
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

// outsideMarks are the marks of a pointer to a file the repository does
// not contain, one a line in testdata/outside-marks.txt (kept out of Go
// code, which the check reads too).
var outsideMarks = sync.OnceValue(func() []string {
	raw, err := os.ReadFile("testdata/outside-marks.txt")
	if err != nil {
		panic(err)
	}
	var marks []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			marks = append(marks, strings.ToLower(l))
		}
	}
	if len(marks) == 0 {
		panic("testdata/outside-marks.txt holds no mark")
	}
	return marks
})

// outsideMark returns the first of outsideMarks that text holds
// (case-insensitively), or "".
func outsideMark(text string) string {
	lower := strings.ToLower(text)
	for _, m := range outsideMarks() {
		if strings.Contains(lower, m) {
			return m
		}
	}
	return ""
}

// TestDocsSelfContained: the documentation, and the OpenAPI document the
// server serves, never point outside the repository (the internal
// specification files a reader does not have).
func TestDocsSelfContained(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the docs")
	for _, file := range append(docFiles(t), "httpapi/openapi.json") {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range strings.Split(string(raw), "\n") {
			if m := outsideMark(l); m != "" {
				t.Errorf("%s:%d: %q points outside the repository: %s", file, n+1, m, strings.TrimSpace(l))
			}
		}
	}
}

// shippedText lists the text files besides Go and Markdown that users or
// operators read: globs, each of which must match (a renamed file must
// not drop out of the check unnoticed), and directories, walked whole.
var shippedText = []string{
	"httpapi/openapi.json",
	"httpapi/ui/",
	"store/postgres/migrations/*.sql",
	"Dockerfile",
	".ci/run",
	".ci/test",
	".ci/release",
	".ci/oauth2-proxy",
	"docs/latchkey.service",
}

var (
	// mdRef is a Markdown file named in a comment or text, with an
	// optional anchor or a quoted section after it: docs/api.md#errors,
	// (docs/security.md, "The risk engine").
	mdRef = regexp.MustCompile(`((?:\.\./)*(?:[\w-]+/)*[\w.-]+\.md)\b(?:#([\w-]+)|,\s*"([^"]+)")?`)
	// urlRe is an absolute URL: its path is not a file of ours.
	urlRe = regexp.MustCompile(`[a-z][a-z0-9+.-]*://\S+`)
	// spaces is a run of white space, a line break and comment marks
	// included once a comment's text is joined.
	spaces = regexp.MustCompile(`\s+`)
)

// checkRefs reports each Markdown file text names that the repository
// does not hold (looked for from the repository's root, then from dir),
// and each anchor or quoted section that file has no heading for.
func checkRefs(t *testing.T, where, dir, text string, anchorsOf func(string) map[string]bool) {
	t.Helper()
	text = spaces.ReplaceAllString(urlRe.ReplaceAllString(text, " "), " ")
	for _, m := range mdRef.FindAllStringSubmatch(text, -1) {
		name, frag, section := m[1], m[2], m[3]
		path := filepath.FromSlash(name)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(dir, path)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: names %s, which the repository does not hold", where, name)
				continue
			}
		}
		a := anchorsOf(path)
		if frag != "" && !a[frag] {
			t.Errorf("%s: %s has no heading with anchor #%s", where, name, frag)
		}
		if section != "" && !a[slug(section)] {
			t.Errorf("%s: %s has no section %q", where, name, section)
		}
	}
}

// TestDocsCodeSelfContained: the rule of the documentation holds for the
// code and the other shipped text too. No Go comment or string literal
// (messages, CLI help, templates) in any package, no UI template,
// migration, OpenAPI description, Dockerfile, CI script or systemd unit
// points to the internal specification files; and every Markdown file
// they name exists, with the anchor or the quoted section it names (as
// in (docs/security.md, "The risk engine")).
func TestDocsCodeSelfContained(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the Go files' comments and strings")
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache[path] = anchors(string(raw))
		return cache[path]
	}

	// Go: every comment and string literal of every package.
	fset := token.NewFileSet()
	goFiles := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		goFiles++
		dir := filepath.Dir(path)
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for i, l := range strings.Split(c.Text, "\n") {
					if m := outsideMark(l); m != "" {
						t.Errorf("%s:%d: %q points outside the repository: %s", path, fset.Position(c.Pos()).Line+i, m, strings.TrimSpace(l))
					}
				}
			}
			checkRefs(t, fset.Position(cg.Pos()).String(), dir, cg.Text(), anchorsOf)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			where := fset.Position(lit.Pos()).String()
			if m := outsideMark(s); m != "" {
				t.Errorf("%s: %q points outside the repository: %s", where, m, lit.Value)
			}
			checkRefs(t, where, dir, s, anchorsOf)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if goFiles < 100 {
		t.Fatalf("only %d Go files found: is the walk broken?", goFiles)
	}

	// The other shipped text, line by line.
	var texts []string
	for _, p := range shippedText {
		if strings.HasSuffix(p, "/") {
			err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					texts = append(texts, path)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		m, err := filepath.Glob(p)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s matches no file (err %v): update shippedText", p, err)
		}
		texts = append(texts, m...)
	}
	for _, file := range texts {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range strings.Split(string(raw), "\n") {
			where := file + ":" + strconv.Itoa(n+1)
			if m := outsideMark(l); m != "" {
				t.Errorf("%s: %q points outside the repository: %s", where, m, strings.TrimSpace(l))
			}
			checkRefs(t, where, filepath.Dir(file), l, anchorsOf)
		}
	}
}

// TestSlug pins the anchor rule to GitHub's for the kinds of heading the
// docs use.
func TestSlug(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "makes anchors")
	for in, want := range map[string]string{
		"Running":               "running",
		"POST /api/v1/otp/send": "post-apiv1otpsend",
		"GET, PATCH, DELETE /api/v1/admin/projects/:id": "get-patch-delete-apiv1adminprojectsid",
		"CORS (browser calls)":                          "cors-browser-calls",
		"The end user's address":                        "the-end-users-address",
		"`sk_live_` keys":                               "sk_live_-keys",
		"Health, readiness, metrics, OpenAPI, JWKS":     "health-readiness-metrics-openapi-jwks",
		"Step-up: TOTP, SMS, backup codes":              "step-up-totp-sms-backup-codes",
		"[Link](docs/api.md) text":                      "link-text",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
