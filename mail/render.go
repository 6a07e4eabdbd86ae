package mail

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"sync"

	"latchkey/store"
)

// Kinds of queued mail (store.Mail.Kind).
const (
	KindOTP   = "otp"
	KindMagic = "magic"
	// KindEmailChange carries a code that confirms an address from a
	// session: the current one, or a new one the user asked to switch to.
	KindEmailChange = "email_change"
	// KindEmailChangedNotice tells the old address that the account's
	// address was changed; it holds no link and no code.
	KindEmailChangedNotice = "email_changed_notice"
)

// Render turns a queued message's content into the message the user
// receives. The subject names the project; a code's or link's body says
// when it expires.
func Render(kind, to, from string, c store.MailContent) (*Message, error) {
	project := strings.TrimSpace(c.Project)
	if project == "" {
		project = "latchkey"
	}
	expiry := "This " + noun(kind) + " expires in " + duration(c.TTLSeconds) + "."
	m := &Message{From: from, To: to}
	if c.Subject != "" {
		// The project's template, rendered when the message was queued.
		m.Subject, m.Text, m.HTML = c.Subject, c.Text, c.HTML
		return m, nil
	}
	var d htmlData
	d.Project, d.Expiry = project, expiry
	switch kind {
	case KindOTP:
		m.Subject = "Your " + project + " sign-in code"
		m.Text = fmt.Sprintf("Your sign-in code for %s is:\n\n    %s\n\n%s\nIf you did not ask for it, ignore this email.\n", project, c.Code, expiry)
		d.Code, d.CodeIntro = c.Code, "Your sign-in code for"
	case KindMagic:
		m.Subject = "Sign in to " + project
		m.Text = fmt.Sprintf("Open this link to sign in to %s:\n\n%s\n\n%s\nIf you did not ask for it, ignore this email.\n", project, c.Link, expiry)
		d.Link = template.URL(c.Link)
	case KindEmailChange:
		m.Subject = "Confirm your email address for " + project
		m.Text = fmt.Sprintf("Your code to confirm this email address for %s is:\n\n    %s\n\n%s\nIf you did not ask for it, ignore this email.\n", project, c.Code, expiry)
		d.Code, d.CodeIntro = c.Code, "Your code to confirm this email address for"
	case KindEmailChangedNotice:
		m.Subject = "Your " + project + " email address was changed"
		to := ""
		if c.NewEmailMasked != "" {
			to = " to " + c.NewEmailMasked
		}
		m.Text = fmt.Sprintf("The email address of your %s account was changed%s. Sign-in codes and links now go to the new address.\n\n"+
			"If you did not make this change, contact the support of %s right away, and tell them that your account's address was changed without your consent.\n",
			project, to, project)
		d.Notice, d.NewEmail = true, c.NewEmailMasked
	default:
		return nil, fmt.Errorf("mail: unknown kind %q", kind)
	}
	var b bytes.Buffer
	if err := htmlTmpl().Execute(&b, d); err != nil {
		return nil, err
	}
	m.HTML = b.String()
	return m, nil
}

type htmlData struct {
	Project, Code, CodeIntro, Expiry string
	Link                             template.URL
	Notice                           bool
	NewEmail                         string // the notice's new address, masked
}

// htmlTmpl is parsed at its first use, not at the start.
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("mail").Parse(`<!doctype html>
<html><body style="font-family:sans-serif;max-width:32em">
{{if .Notice}}<p>The email address of your <b>{{.Project}}</b> account was changed{{if .NewEmail}} to <b>{{.NewEmail}}</b>{{end}}. Sign-in codes and links now go to the new address.</p>
<p>If you did not make this change, contact the support of {{.Project}} right away, and tell them that your account's address was changed without your consent.</p>
{{else}}{{if .Code}}<p>{{.CodeIntro}} <b>{{.Project}}</b> is:</p>
<p style="font-size:2em;letter-spacing:0.2em;font-family:monospace">{{.Code}}</p>
{{else}}<p>Open this link to sign in to <b>{{.Project}}</b>:</p>
<p><a href="{{.Link}}">Sign in to {{.Project}}</a></p>
<p style="font-size:small;word-break:break-all">{{.Link}}</p>
{{end}}<p>{{.Expiry}}</p>
<p style="color:#666">If you did not ask for it, ignore this email.</p>
{{end}}</body></html>
`))
})

func noun(kind string) string {
	if kind == KindMagic {
		return "link"
	}
	return "code"
}

// duration says ttl seconds in words: "10 minutes", "1 hour", "45 seconds".
func duration(ttl int) string {
	switch {
	case ttl <= 0:
		return "a few minutes"
	case ttl%3600 == 0:
		return plural(ttl/3600, "hour")
	case ttl%60 == 0:
		return plural(ttl/60, "minute")
	default:
		return plural(ttl, "second")
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
