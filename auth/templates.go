package auth

import (
	"bytes"
	"context"
	"errors"
	htmltemplate "html/template"
	"regexp"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"

	"golang.org/x/text/language"

	"latchkey/store"
)

// Custom and localized mail (decisions.md §18). A project may upload, per
// kind of mail and per locale, Go templates for the subject, the text
// part and the HTML part. They are checked at upload (parsed, then
// rendered on sample data) and rendered when a message is queued, inside
// the transaction that queues it (CPU only, no I/O), so the queue sends
// what was rendered; a kind and locale without a template keep the
// built-in English wording, which package mail renders at send time.

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

// Template limits: what one part may hold, and how many tags of an
// Accept-Language header are tried (each costs a lookup per send).
const (
	maxTemplatePart   = 64 << 10
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
// {{.Code}}, {{.Link}}, {{.ExpiresInMinutes}}, {{.NewEmailMasked}}.
type templateData struct {
	Project          string
	Email            string
	Code             string
	Link             string
	ExpiresInMinutes int
	NewEmailMasked   string // email_changed_notice: the new address, masked (MaskEmail)
}

// sampleData is the data a template is checked and previewed with.
func sampleData(project, kind string) templateData {
	d := templateData{Project: project, Email: "ada@example.com"}
	switch kind {
	case "otp", "email_change":
		d.Code, d.ExpiresInMinutes = "123456", int(OTPLifetime.Minutes())
	case "magic_link":
		d.Link, d.ExpiresInMinutes = "https://auth.example.com"+MagicPath+"?token=sample-token", int(MagicLifetime.Minutes())
	case "email_changed_notice":
		d.NewEmailMasked = MaskEmail("grace@example.org")
	}
	return d
}

// compiled is a template parsed and ready to render.
type compiled struct {
	subject, text *texttemplate.Template
	html          *htmltemplate.Template
}

// templateErrLine finds the line in a template package's error:
// "template: text:3: ..." or "template: text:3:7: executing ...".
var templateErrLine = regexp.MustCompile(`^template: [a-z]+:(\d+)(?::\d+)?: (?:executing "[a-z]+" at <[^>]*>: )?(.*)$`)

// templateError is the 400 VALIDATION_ERROR of a template part that does
// not parse or render: it names the part and the line.
func templateError(part string, err error) error {
	msg := err.Error()
	if m := templateErrLine.FindStringSubmatch(msg); m != nil {
		return Invalid("%s: line %s: %s.", part, m[1], strings.TrimSuffix(m[2], "."))
	}
	return Invalid("%s: %s.", part, strings.TrimPrefix(msg, "template: "))
}

// compileTemplate parses the three parts (each failure a VALIDATION_ERROR
// naming the part and the line).
func compileTemplate(subject, text, html string) (*compiled, error) {
	var c compiled
	var err error
	if c.subject, err = texttemplate.New("subject").Option("missingkey=error").Parse(subject); err != nil {
		return nil, templateError("subject", err)
	}
	if c.text, err = texttemplate.New("text").Option("missingkey=error").Parse(text); err != nil {
		return nil, templateError("text", err)
	}
	if c.html, err = htmltemplate.New("html").Option("missingkey=error").Parse(html); err != nil {
		return nil, templateError("html", err)
	}
	return &c, nil
}

// render executes c on d. The subject is one line (line breaks become
// spaces: it is a header).
func (c *compiled) render(d templateData) (*Rendered, error) {
	var s, t, h bytes.Buffer
	if err := c.subject.Execute(&s, d); err != nil {
		return nil, templateError("subject", err)
	}
	if err := c.text.Execute(&t, d); err != nil {
		return nil, templateError("text", err)
	}
	if err := c.html.Execute(&h, d); err != nil {
		return nil, templateError("html", err)
	}
	subject := strings.Join(strings.Fields(s.String()), " ")
	return &Rendered{Subject: subject, Text: t.String(), HTML: h.String()}, nil
}

// checkTemplate validates an upload or a draft of kind: the three parts
// present, UTF-8, at most 64 KiB each, parsed and rendered on sample
// data; the rendered subject not empty, and the text part showing the
// code or the link (the raw message stays greppable for it). It returns
// the sample rendering.
func checkTemplate(kind, project string, in TemplateInput) (*compiled, *Rendered, error) {
	parts := []struct {
		name string
		v    *string
	}{{"subject", in.Subject}, {"text", in.Text}, {"html", in.HTML}}
	for _, p := range parts {
		if p.v == nil || strings.TrimSpace(*p.v) == "" {
			return nil, nil, Invalid("%s is required: a template string.", p.name)
		}
		if len(*p.v) > maxTemplatePart || !utf8.ValidString(*p.v) || strings.IndexByte(*p.v, 0) >= 0 {
			return nil, nil, Invalid("%s must be UTF-8 text of at most 64 KiB.", p.name)
		}
	}
	c, err := compileTemplate(*in.Subject, *in.Text, *in.HTML)
	if err != nil {
		return nil, nil, err
	}
	d := sampleData(project, kind)
	r, err := c.render(d)
	if err != nil {
		return nil, nil, err
	}
	if r.Subject == "" {
		return nil, nil, Invalid("subject renders empty on sample data.")
	}
	switch {
	case d.Code != "" && !strings.Contains(r.Text, d.Code):
		return nil, nil, Invalid("text must show the code: use {{.Code}}.")
	case d.Link != "" && !strings.Contains(r.Text, d.Link):
		return nil, nil, Invalid("text must show the link: use {{.Link}}.")
	}
	return c, r, nil
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

// renderCustom fills c's Subject, Text and HTML from the project's
// template for the mail kind in the first locale of the requested one's
// chain that has one, inside tx. Without one, c is left as it is (the
// built-in English). A stored template that no longer renders (it was
// checked at upload) falls back to the built-in too.
func renderCustom(tx store.Tx, projectID, mailKind, to, locale string, c *store.MailContent) error {
	kind := templateKindOf(mailKind)
	for _, loc := range localeChain(locale) {
		t, err := tx.Template(projectID, kind, loc)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		comp, err := compileTemplate(t.Subject, t.Text, t.HTML)
		if err != nil {
			return nil
		}
		r, err := comp.render(templateData{Project: c.Project, Email: to, Code: c.Code, Link: c.Link, ExpiresInMinutes: c.TTLSeconds / 60,
			NewEmailMasked: c.NewEmailMasked})
		if err != nil {
			return nil
		}
		c.Subject, c.Text, c.HTML, c.Locale = r.Subject, r.Text, r.HTML, loc
		return nil
	}
	return nil
}

// checkKind validates a template kind and a locale from a path.
func checkKind(kind, locale string) (string, error) {
	if _, ok := MailKindOf(kind); !ok {
		return "", Invalid("kind must be one of otp, magic_link, email_change, email_changed_notice.")
	}
	return ParseLocale(locale)
}

// PutTemplate stores a project's template of kind in locale, replacing
// any, once it parses and renders on sample data. Errors: 400
// VALIDATION_ERROR (bad kind, locale or template: the message names the
// part and the line), 404 PROJECT_NOT_FOUND.
func (s *Service) PutTemplate(ctx context.Context, projectID, kind, locale string, in TemplateInput) (TemplateView, error) {
	loc, err := checkKind(kind, locale)
	if err != nil {
		return TemplateView{}, err
	}
	var t *store.Template
	err = s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		if _, _, err := checkTemplate(kind, p.Name, in); err != nil {
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
			out = append(out, viewTemplate(t))
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
	Locale   string            // the locale whose template rendered ("" for the built-in)
	BuiltIn  bool              // render the built-in (package mail) instead
	MailKind string            // the queued mail's kind
	To       string            // the sample address
	Sample   store.MailContent // the sample content for the built-in
}

// PreviewTemplate renders on sample data the draft in (when it has any
// part), or else what a user asking for locale would receive: the stored
// template of the first locale of its chain that has one, or the
// built-in English (BuiltIn). Errors: 400 VALIDATION_ERROR (as
// PutTemplate for a draft), 404 PROJECT_NOT_FOUND.
func (s *Service) PreviewTemplate(ctx context.Context, projectID, kind, locale string, in TemplateInput) (*Preview, error) {
	loc, err := checkKind(kind, locale)
	if err != nil {
		return nil, err
	}
	mailKind, _ := MailKindOf(kind)
	var out *Preview
	err = s.db.View(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		d := sampleData(p.Name, kind)
		out = &Preview{MailKind: mailKind, To: d.Email,
			Sample: store.MailContent{Project: p.Name, Code: d.Code, Link: d.Link, TTLSeconds: d.ExpiresInMinutes * 60,
				NewEmailMasked: d.NewEmailMasked}}
		if in.Subject != nil || in.Text != nil || in.HTML != nil {
			_, r, err := checkTemplate(kind, p.Name, in)
			if err != nil {
				return err
			}
			out.Rendered, out.Locale = *r, loc
			return nil
		}
		c := out.Sample
		if err := renderCustom(tx, projectID, mailKind, d.Email, loc, &c); err != nil {
			return err
		}
		if c.Locale == "" {
			out.BuiltIn = true
			return nil
		}
		out.Rendered, out.Locale = Rendered{Subject: c.Subject, Text: c.Text, HTML: c.HTML}, c.Locale
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}
