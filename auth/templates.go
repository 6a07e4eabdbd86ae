package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"strconv"
	"strings"
	texttemplate "text/template"
	"text/template/parse"
	"unicode/utf8"

	"golang.org/x/text/language"

	"latchkey/store"
)

// Custom and localized mail. A project may upload, per kind of mail and
// per locale, Go templates for the subject, the text part and the HTML
// part. They are checked at upload (parsed, their shape checked, then
// rendered on several sample data sets) and rendered when a message is
// queued, before the write transaction that queues it opens (mailbox.go),
// so the queue sends what was rendered and no template runs while a
// transaction is open; a kind and locale without a template keep the
// built-in English, which package mail renders at send time.
//
// A template cannot make its render's work grow past what its source
// and the data say (checkShape, budget, limitWriter): the data holds
// short strings and a number, no list, so range (which could only count,
// {{range 1000000000}}) is refused; so are template calls and
// definitions (define, template, block), through which a part could run
// itself many times (n nested calls, 2^n runs); the strings printf,
// print, println, html, js and urlquery build count against a budget of
// maxRenderedPart per part (printf "%1000000d" builds a megabyte, and a
// variable can double a string at each step); and a part's output stops
// at maxRenderedPart. What is left runs each action of the source at
// most once, on values the budget bounds.

// TemplateKinds are the kinds of mail a template may word, in the order
// lists show them. Their mail kinds (store.Mail.Kind) differ only for the
// magic link ("magic").
var TemplateKinds = []string{"otp", "magic_link", "email_change", "email_changed_notice"}

// MailKindOf returns the queued mail's kind (store.Mail.Kind) of a
// template kind, and false for a kind that is not one.
func MailKindOf(kind string) (string, bool) {
	switch kind {
	case "otp":
		return codeKindOTP, true
	case "magic_link":
		return codeKindMagic, true
	case "email_change":
		return mailKindEmailChange, true
	case "email_changed_notice":
		return mailKindEmailChanged, true
	}
	return "", false
}

// templateKindOf is MailKindOf reversed.
func templateKindOf(mailKind string) string {
	if mailKind == codeKindMagic {
		return "magic_link"
	}
	return mailKind
}

// Template limits: what one part's source may hold, what one rendered
// part (and the strings its functions build) may reach, and how many tags
// of an Accept-Language header are tried (each costs a lookup per send).
const (
	maxTemplatePart   = 64 << 10
	maxRenderedPart   = 256 << 10
	maxLocaleAttempts = 4
)

// TemplateInput is the body of PUT .../templates/:kind/:locale (and the
// optional draft of a preview).
type TemplateInput struct {
	Subject *string `json:"subject"`
	Text    *string `json:"text"`
	HTML    *string `json:"html"`
}

// TemplateView is a template as the admin API shows it.
type TemplateView struct {
	Kind      string `json:"kind"`
	Locale    string `json:"locale"`
	Subject   string `json:"subject"`
	Text      string `json:"text"`
	HTML      string `json:"html"`
	UpdatedAt string `json:"updatedAt"`
}

func viewTemplate(t *store.Template) TemplateView {
	return TemplateView{Kind: t.Kind, Locale: t.Locale, Subject: t.Subject, Text: t.Text, HTML: t.HTML, UpdatedAt: formatTime(t.UpdatedAt)}
}

// Rendered is a message rendered from a template: its subject and its
// two parts.
type Rendered struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
}

// templateData is what a template sees: {{.Project}}, {{.Email}},
// {{.Code}}, {{.Link}}, {{.ExpiresInMinutes}}, {{.NewEmailMasked}}. A
// field a kind of mail does not carry is empty (the notice has no code,
// link or expiry; only the notice has the masked new address).
type templateData struct {
	Project          string
	Email            string
	Code             string
	Link             string
	ExpiresInMinutes int
	NewEmailMasked   string // email_changed_notice: the new address, masked (MaskEmail)
}

// dataOf is what a template sees of a message to to that says c: the
// one place a queued message's content becomes template data.
func dataOf(to string, c store.MailContent) templateData {
	return templateData{Project: c.Project, Email: to, Code: c.Code, Link: c.Link, ExpiresInMinutes: c.TTLSeconds / 60,
		NewEmailMasked: c.NewEmailMasked}
}

// sample is one data set a template is checked on; name says which in
// an error ("" for the first, the one previews show).
type sample struct {
	name string
	data templateData
}

// Values of the sample sets: the longest a send can carry (a project
// name of 100 characters, of 4 bytes each and characters that HTML
// escapes; an address of 254 with characters that escape too; a long
// link), and short ones in other scripts.
var (
	longProject = strings.Repeat("\U0001D50F<&\"'", 20)
	longEmail   = "o'brien+" + strings.Repeat("x", 48) + "&co@" + strings.Repeat(strings.Repeat("d", 62)+".", 2) + strings.Repeat("e", 60) + ".example"
	longLink    = "https://" + strings.Repeat("sign-in.", 24) + "example.com" + MagicPath + "?token=" + strings.Repeat("T", 43)
)

// samples returns the data sets a template of kind is checked on, first
// the one previews show (the project's name, ada@example.com, code
// 123456, a sample link). Each carries the fields of kind only.
func samples(project, kind string) []sample {
	var code, link string
	minutes := 0
	switch kind {
	case "otp", "email_change":
		code, minutes = "123456", int(OTPLifetime.Minutes())
	case "magic_link":
		link, minutes = "https://auth.example.com"+MagicPath+"?token=sample-token", int(MagicLifetime.Minutes())
	}
	notice := kind == "email_changed_notice"
	set := func(name, project, email, newCode, newLink, newEmail string) sample {
		d := templateData{Project: project, Email: email, ExpiresInMinutes: minutes}
		if code != "" {
			d.Code = newCode
		}
		if link != "" {
			d.Link = newLink
		}
		if notice {
			d.NewEmailMasked = MaskEmail(newEmail)
		}
		return sample{name, d}
	}
	return []sample{
		set("", project, "ada@example.com", code, link, "grace@example.org"),
		set("the longest values", longProject, longEmail, "999999", longLink, longEmail),
		set("short values in other scripts", "مشروع 日本", "li@example.cn", "000000", "https://id.example.cn"+MagicPath+"?token=t", "wang@example.cn"),
	}
}

// compiled is a template parsed, its shape checked, and ready to render
// (by one goroutine at a time: its functions share a budget).
type compiled struct {
	subject, text *texttemplate.Template
	html          *htmltemplate.Template
	budget        *budget
}

// templateErrLine finds the line in a template package's error:
// "template: text:3: ..." or "template: text:3:7: executing ...".
var templateErrLine = lazyRegexp(`^template: [a-z]+:(\d+)(?::\d+)?: (?:executing "[a-z]+" at <[^>]*>: )?(.*)$`)

// templateError is the 400 VALIDATION_ERROR of a template part that does
// not parse or render: it names the part and the line.
func templateError(part string, err error) error {
	msg := err.Error()
	if m := templateErrLine().FindStringSubmatch(msg); m != nil {
		return Invalid("%s: line %s: %s.", part, m[1], strings.TrimSuffix(m[2], "."))
	}
	return Invalid("%s: %s.", part, strings.TrimSuffix(strings.TrimPrefix(msg, "template: "), "."))
}

// compileTemplate parses the three parts and checks their shape (each
// failure a VALIDATION_ERROR naming the part and the line).
func compileTemplate(subject, text, html string) (*compiled, error) {
	c := &compiled{budget: &budget{}}
	funcs := c.budget.funcs()
	var err error
	if c.subject, err = texttemplate.New("subject").Option("missingkey=error").Funcs(funcs).Parse(subject); err != nil {
		return nil, templateError("subject", err)
	}
	if c.text, err = texttemplate.New("text").Option("missingkey=error").Funcs(funcs).Parse(text); err != nil {
		return nil, templateError("text", err)
	}
	if c.html, err = htmltemplate.New("html").Option("missingkey=error").Funcs(htmltemplate.FuncMap(funcs)).Parse(html); err != nil {
		return nil, templateError("html", err)
	}
	if err := checkShape("subject", c.subject.Tree, len(c.subject.Templates())); err != nil {
		return nil, err
	}
	if err := checkShape("text", c.text.Tree, len(c.text.Templates())); err != nil {
		return nil, err
	}
	return c, checkShape("html", c.html.Tree, len(c.html.Templates()))
}

// checkShape refuses a part whose work could grow past its source:
// range anywhere (line of the first), a template call ({{template}},
// {{block}}), and a {{define}} (a part holding more templates than its
// own, ones says how many it holds).
func checkShape(part string, tree *parse.Tree, ones int) error {
	if tree == nil || tree.Root == nil {
		return nil
	}
	if n := refusedNode(tree.Root); n != nil {
		line := lineOf(tree, n)
		if _, ok := n.(*parse.RangeNode); ok {
			return Invalid("%s: line %d: range is not allowed: a template may not loop (no field is a list).", part, line)
		}
		return Invalid("%s: line %d: template and block are not allowed: a part may not call a template.", part, line)
	}
	if ones > 1 {
		return Invalid("%s: define is not allowed: a part is one template.", part)
	}
	return nil
}

// refusedNode returns the first range or template call under n, in
// source order, or nil.
func refusedNode(n parse.Node) parse.Node {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if r := refusedNode(c); r != nil {
				return r
			}
		}
	case *parse.IfNode:
		return refusedBranch(&n.BranchNode)
	case *parse.WithNode:
		return refusedBranch(&n.BranchNode)
	case *parse.RangeNode, *parse.TemplateNode:
		return n
	}
	return nil
}

func refusedBranch(b *parse.BranchNode) parse.Node {
	if r := refusedNode(b.List); r != nil {
		return r
	}
	if b.ElseList != nil {
		return refusedNode(b.ElseList)
	}
	return nil
}

// lineOf returns the line of n in tree's source.
func lineOf(tree *parse.Tree, n parse.Node) int {
	loc, _ := tree.ErrorContext(n)
	// loc is "name:line:col".
	parts := strings.Split(loc, ":")
	if len(parts) >= 3 {
		if line, err := strconv.Atoi(parts[len(parts)-2]); err == nil {
			return line
		}
	}
	return 1
}

// errBuilt is a part's functions building more than its budget.
var errBuilt = fmt.Errorf("the strings built by printf, print, println, html, js and urlquery pass %d KiB", maxRenderedPart>>10)

// budget bounds the bytes a part's string-building functions make while
// it renders (reset before each part): the template's functions printf,
// print, println, html, js and urlquery are these, counted. A call that
// passes it fails, and so does the render.
type budget struct{ left int }

// take counts s against the budget.
func (b *budget) take(s string) (string, error) {
	if len(s) > b.left {
		b.left = 0
		return "", errBuilt
	}
	b.left -= len(s)
	return s, nil
}

// funcs returns the counted functions, as the builtins they replace.
func (b *budget) funcs() texttemplate.FuncMap {
	return texttemplate.FuncMap{
		"printf":   func(format string, args ...any) (string, error) { return b.take(fmt.Sprintf(format, args...)) },
		"print":    func(args ...any) (string, error) { return b.take(fmt.Sprint(args...)) },
		"println":  func(args ...any) (string, error) { return b.take(fmt.Sprintln(args...)) },
		"html":     func(args ...any) (string, error) { return b.take(texttemplate.HTMLEscaper(args...)) },
		"js":       func(args ...any) (string, error) { return b.take(texttemplate.JSEscaper(args...)) },
		"urlquery": func(args ...any) (string, error) { return b.take(texttemplate.URLQueryEscaper(args...)) },
	}
}

// errTooLarge is a part's output passing maxRenderedPart.
var errTooLarge = errors.New("rendered part too large")

// limitWriter is a part's output: a write that would pass
// maxRenderedPart fails, which stops the render.
type limitWriter struct{ b bytes.Buffer }

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > maxRenderedPart {
		return 0, errTooLarge
	}
	return w.b.Write(p)
}

// executor is a text or HTML template.
type executor interface {
	Execute(w io.Writer, data any) error
}

// render executes c on d, each part under the limits. The subject is
// one line (line breaks become spaces: it is a header).
func (c *compiled) render(d templateData) (*Rendered, error) {
	var out [3]string
	for i, p := range []struct {
		name string
		t    executor
	}{{"subject", c.subject}, {"text", c.text}, {"html", c.html}} {
		var w limitWriter
		c.budget.left = maxRenderedPart
		if err := p.t.Execute(&w, d); errors.Is(err, errTooLarge) {
			return nil, Invalid("%s renders more than %d KiB.", p.name, maxRenderedPart>>10)
		} else if err != nil {
			return nil, templateError(p.name, err)
		}
		out[i] = w.b.String()
	}
	return &Rendered{Subject: strings.Join(strings.Fields(out[0]), " "), Text: out[1], HTML: out[2]}, nil
}

// checkTemplate validates an upload or a draft of kind: the three parts
// present, UTF-8, at most 64 KiB each, parsed, of an allowed shape, and
// rendered within the limits on every sample data set (samples); on each
// the rendered subject not empty, and the text part showing the code or
// the link (the raw message stays greppable for it). A failure on a set
// other than the first names it. It returns the rendering of the first.
func checkTemplate(kind, project string, in TemplateInput) (*Rendered, error) {
	parts := []struct {
		name string
		v    *string
	}{{"subject", in.Subject}, {"text", in.Text}, {"html", in.HTML}}
	for _, p := range parts {
		if p.v == nil || strings.TrimSpace(*p.v) == "" {
			return nil, Invalid("%s is required: a template string.", p.name)
		}
		if len(*p.v) > maxTemplatePart || !utf8.ValidString(*p.v) || strings.IndexByte(*p.v, 0) >= 0 {
			return nil, Invalid("%s must be UTF-8 text of at most 64 KiB.", p.name)
		}
	}
	c, err := compileTemplate(*in.Subject, *in.Text, *in.HTML)
	if err != nil {
		return nil, err
	}
	var first *Rendered
	for _, s := range samples(project, kind) {
		r, err := checkSample(c, s.data)
		if err != nil {
			if s.name != "" {
				e := AsError(err)
				return nil, Invalid("%s (on the sample with %s).", strings.TrimSuffix(e.Message, "."), s.name)
			}
			return nil, err
		}
		if first == nil {
			first = r
		}
	}
	return first, nil
}

// checkSample renders c on d and checks the result.
func checkSample(c *compiled, d templateData) (*Rendered, error) {
	r, err := c.render(d)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Subject == "":
		return nil, Invalid("subject renders empty on sample data.")
	case d.Code != "" && !strings.Contains(r.Text, d.Code):
		return nil, Invalid("text must show the code: use {{.Code}}.")
	case d.Link != "" && !strings.Contains(r.Text, d.Link):
		return nil, Invalid("text must show the link: use {{.Link}}.")
	}
	return r, nil
}

// renderStored renders a stored template on d, under the checks and
// limits of an upload: one stored by an older version, or rendering
// past a limit on real data, is an error (the caller falls back to the
// built-in).
func renderStored(t *store.Template, d templateData) (*Rendered, error) {
	for _, p := range []string{t.Subject, t.Text, t.HTML} {
		if len(p) > maxTemplatePart {
			return nil, Invalid("a part is longer than 64 KiB.")
		}
	}
	c, err := compileTemplate(t.Subject, t.Text, t.HTML)
	if err != nil {
		return nil, err
	}
	return c.render(d)
}

// ParseLocale returns the canonical form of a BCP 47 tag ("pt-br" →
// "pt-BR"), or 400 VALIDATION_ERROR.
func ParseLocale(locale string) (string, error) {
	if len(locale) > 35 {
		return "", Invalid("locale must be a BCP 47 language tag such as en, pt or pt-BR.")
	}
	tag, err := language.Parse(locale)
	if err != nil || tag == language.Und {
		return "", Invalid("locale must be a BCP 47 language tag such as en, pt or pt-BR.")
	}
	return tag.String(), nil
}

// localeChain returns the locales to try, in order, for a requested
// locale: a tag (from the send body) or an Accept-Language value passed
// by the app. Each tag is followed by its parents ("pt-BR", "pt"), then
// "en" (a project's own English) closes the chain; the built-in English
// follows it. Unparsable input asks for English only.
func localeChain(requested string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if requested != "" && len(requested) <= 256 {
		tags, _, err := language.ParseAcceptLanguage(requested)
		if err == nil {
			for i, tag := range tags {
				if i == maxLocaleAttempts {
					break
				}
				for t := tag; t != language.Und; t = t.Parent() {
					add(t.String())
				}
			}
		}
	}
	add("en")
	return out
}

// lookupTemplate returns the project's template of the mail kind in the
// first locale of the requested one's chain that has one, read in tx;
// nil when none has (the built-in English applies).
func lookupTemplate(tx store.Tx, projectID, mailKind, locale string) (*store.Template, error) {
	kind := templateKindOf(mailKind)
	for _, loc := range localeChain(locale) {
		t, err := tx.Template(projectID, kind, loc)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		return t, err
	}
	return nil, nil
}

// checkKind validates a template kind and a locale from a path.
func checkKind(kind, locale string) (string, error) {
	if _, ok := MailKindOf(kind); !ok {
		return "", Invalid("kind must be one of otp, magic_link, email_change, email_changed_notice.")
	}
	return ParseLocale(locale)
}

// PutTemplate stores a project's template of kind in locale, replacing
// any, once it passes checkTemplate, which runs before the write
// transaction opens (on the project's name as read just before: a rename
// in between changes nothing the check depends on). Errors: 400
// VALIDATION_ERROR (bad kind, locale or template: the message names the
// part and the line), 404 PROJECT_NOT_FOUND.
func (s *Service) PutTemplate(ctx context.Context, projectID, kind, locale string, in TemplateInput) (TemplateView, error) {
	loc, err := checkKind(kind, locale)
	if err != nil {
		return TemplateView{}, err
	}
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return TemplateView{}, err
	}
	s.rendering()
	if _, err := checkTemplate(kind, p.Name, in); err != nil {
		return TemplateView{}, err
	}
	var t *store.Template
	err = s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		t = &store.Template{ProjectID: projectID, Kind: kind, Locale: loc, Subject: *in.Subject, Text: *in.Text, HTML: *in.HTML, UpdatedAt: s.now().UTC()}
		return tx.PutTemplate(t)
	})
	if err != nil {
		return TemplateView{}, internal(err)
	}
	return viewTemplate(t), nil
}

// Templates lists a project's templates by kind then locale; 404
// PROJECT_NOT_FOUND for an unknown project.
func (s *Service) Templates(ctx context.Context, projectID string) ([]TemplateView, error) {
	out := []TemplateView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		ts, err := tx.Templates(projectID)
		for _, t := range ts {
			if t.Kind != store.TemplateKindPage { // page texts: page_texts.go
				out = append(out, viewTemplate(t))
			}
		}
		return err
	})
	return out, internal(err)
}

// DeleteTemplate removes a project's template of kind in locale: that
// locale falls back again (in the end to the built-in English). Errors:
// 400 VALIDATION_ERROR, 404 PROJECT_NOT_FOUND, 404 TEMPLATE_NOT_FOUND.
func (s *Service) DeleteTemplate(ctx context.Context, projectID, kind, locale string) error {
	loc, err := checkKind(kind, locale)
	if err != nil {
		return err
	}
	return internal(s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		if _, err := tx.Template(projectID, kind, loc); errors.Is(err, store.ErrNotFound) {
			return ErrTemplateNotFound
		} else if err != nil {
			return err
		}
		return tx.DeleteTemplate(projectID, kind, loc)
	}))
}

// Preview is a template rendered on sample data. BuiltIn reports that no
// template applies (neither the draft nor a stored one of the locale's
// chain): the caller renders the built-in English of MailKind on Sample.
type Preview struct {
	Rendered
	Locale  string // the locale whose template rendered ("" for the built-in)
	BuiltIn bool   // the built-in wording rendered (Config.BuiltInMail)
}

// PreviewTemplate renders on sample data the draft in (when it has any
// part), or else what a user asking for locale would receive: the stored
// template of the first locale of its chain that has one, or the
// built-in English (BuiltIn, rendered by Config.BuiltInMail), as a send
// would (a stored template that no longer renders falls back to the
// built-in). It renders after its read transaction closed. Errors: 400 VALIDATION_ERROR (as PutTemplate for a
// draft), 404 PROJECT_NOT_FOUND.
func (s *Service) PreviewTemplate(ctx context.Context, projectID, kind, locale string, in TemplateInput) (*Preview, error) {
	loc, err := checkKind(kind, locale)
	if err != nil {
		return nil, err
	}
	mailKind, _ := MailKindOf(kind)
	draft := in.Subject != nil || in.Text != nil || in.HTML != nil
	var p *store.Project
	var t *store.Template
	err = s.db.View(ctx, func(tx store.Tx) error {
		var err error
		if p, err = projectTx(tx, projectID); err != nil || draft {
			return err
		}
		t, err = lookupTemplate(tx, projectID, mailKind, loc)
		return err
	})
	if err != nil {
		return nil, internal(err)
	}
	d := samples(p.Name, kind)[0].data
	sample := store.MailContent{Project: p.Name, Code: d.Code, Link: d.Link, TTLSeconds: d.ExpiresInMinutes * 60,
		NewEmailMasked: d.NewEmailMasked}
	out := &Preview{}
	s.rendering()
	if draft {
		r, err := checkTemplate(kind, p.Name, in)
		if err != nil {
			return nil, err
		}
		out.Rendered, out.Locale = *r, loc
		return out, nil
	}
	if t != nil {
		if r, err := renderStored(t, dataOf(d.Email, sample)); err == nil {
			out.Rendered, out.Locale = *r, t.Locale
			return out, nil
		}
	}
	if s.builtIn == nil {
		return nil, internal(errors.New("auth: no renderer of the built-in mail (Config.BuiltInMail)"))
	}
	if out.Rendered, err = s.builtIn(mailKind, d.Email, sample); err != nil {
		return nil, internal(err)
	}
	out.BuiltIn = true
	return out, nil
}
