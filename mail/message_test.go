package mail_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/mail"
	"latchkey/store"
)

// TestRawMessageReadable: a script that greps the raw .eml (as people and
// black-box tests do with the outbox) finds the code as the message's only
// run of six digits and the link unbroken, in both parts.
func TestRawMessageReadable(t *testing.T) {
	t.Parallel()
	link := "http://127.0.0.1:18080/api/v1/magic/verify?token=AbC-dEf_0123456789abcdefghijklmnopqrstuvwxy"
	for i := 0; i < 50; i++ { // boundaries and Message-IDs are random
		m, err := mail.Render(mail.KindOTP, "a@example.com", "auth@example.com", store.MailContent{Project: "Acme", Code: "048213", TTLSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		m.ID, m.Date = "mail-123456789", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		raw := string(m.Bytes())
		runs := regexp.MustCompile(`\d{6,}`).FindAllString(raw[strings.Index(raw, "\r\n\r\n"):], -1)
		if len(runs) != 2 || runs[0] != "048213" || runs[1] != "048213" {
			t.Fatalf("digit runs in the body %q, want the code in each part:\n%s", runs, raw)
		}
		if got := regexp.MustCompile(`\d{6}`).FindString(raw); got != "048213" {
			t.Fatalf("first six digits %q, want the code:\n%s", got, raw)
		}
		if strings.Contains(raw, "quoted-printable") {
			t.Fatalf("ASCII message was encoded:\n%s", raw)
		}
		subject, text, html := parseMessage(t, []byte(raw))
		if subject != "Your Acme sign-in code" || !strings.Contains(text, "expires in 10 minutes") || !strings.Contains(html, "048213") {
			t.Fatalf("subject %q text %q html %q", subject, text, html)
		}

		m, err = mail.Render(mail.KindMagic, "a@example.com", "auth@example.com", store.MailContent{Project: "Acme", Link: link, TTLSeconds: 900})
		if err != nil {
			t.Fatal(err)
		}
		raw = string(m.Bytes())
		if n := strings.Count(raw, link); n != 3 { // text, href, visible copy
			t.Fatalf("link appears %d times unbroken, want 3:\n%s", n, raw)
		}
		if _, text, _ := parseMessage(t, []byte(raw)); !strings.Contains(text, link+"\n") || !strings.Contains(text, "expires in 15 minutes") {
			t.Fatalf("text %q", text)
		}
	}
}

// TestSubjectNeverDecodesAsProjectChose: a project name that looks like
// an RFC 2047 encoded word is shown literally, not decoded.
func TestSubjectNeverDecodesAsProjectChose(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"=?utf-8?q?Your_bank?=", "=??B??=", strings.Repeat("=?ü", 40)} {
		m, err := mail.Render(mail.KindOTP, "a@example.com", "auth@example.com", store.MailContent{Project: name, Code: "123456", TTLSeconds: 600})
		if err != nil {
			t.Fatal(err)
		}
		if subject, _, _ := parseMessage(t, m.Bytes()); subject != "Your "+name+" sign-in code" {
			t.Fatalf("subject %q, want the name literally", subject)
		}
	}
}

// TestAddressMessages: the address confirmation carries its code as the
// only run of six digits, names the project in the subject and says when
// the code expires; the notice to the old address names the project and
// the new address masked (in both parts), says in words how to get help,
// and holds no code, no link and no digits at all. A notice queued
// without the new address (before it was recorded) says the rest.
func TestAddressMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, subject, text string
		content             store.MailContent
		code                string
	}{
		{mail.KindEmailChange, "Confirm your email address for Acme", "expires in 10 minutes",
			store.MailContent{Project: "Acme", Code: "730519", TTLSeconds: 600}, "730519"},
		{mail.KindEmailChangedNotice, "Your Acme email address was changed",
			"was changed to j***@e***.com. Sign-in codes and links now go to the new address.\n\nIf you did not make this change, contact the support of Acme right away",
			store.MailContent{Project: "Acme", NewEmailMasked: "j***@e***.com"}, ""},
		{mail.KindEmailChangedNotice, "Your Acme email address was changed",
			"account was changed. Sign-in codes and links now go to the new address.\n\nIf you did not make this change, contact the support of Acme right away",
			store.MailContent{Project: "Acme"}, ""},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			m, err := mail.Render(c.kind, "a@example.com", "auth@example.com", c.content)
			if err != nil {
				t.Fatal(err)
			}
			m.ID = "mail-x"
			raw := string(m.Bytes())
			subject, text, html := parseMessage(t, []byte(raw))
			if subject != c.subject || !strings.Contains(text, c.text) {
				t.Fatalf("subject %q text %q, want %q and %q", subject, text, c.subject, c.text)
			}
			body := raw[strings.Index(raw, "\r\n\r\n"):]
			runs := regexp.MustCompile(`\d{6,}`).FindAllString(body, -1)
			if c.code != "" && (len(runs) != 2 || runs[0] != c.code || runs[1] != c.code || !strings.Contains(html, c.code)) {
				t.Fatalf("digit runs %q, want the code in each part:\n%s", runs, raw)
			}
			if c.content.NewEmailMasked != "" && !strings.Contains(html, "<b>"+c.content.NewEmailMasked+"</b>") {
				t.Fatalf("the HTML part does not name the new address:\n%s", html)
			}
			if c.code == "" && !strings.Contains(html, "contact the support of Acme right away") {
				t.Fatalf("the HTML part does not say how to get help:\n%s", html)
			}
			if c.code == "" && (regexp.MustCompile(`\d`).MatchString(text) || regexp.MustCompile(`\d{4}`).MatchString(html) || strings.Contains(text+html, "http") || strings.Contains(html, "<a ")) {
				t.Fatalf("notice holds digits or a link:\n%s", raw)
			}
		})
	}
}

// TestMessageUTF8Text: a text part in UTF-8 (a project's template in
// another language) goes as 8bit, so a code on a long line and a link's
// "=" stand in the raw message as shown; the HTML part stays
// quoted-printable, and a part with a control character too.
func TestMessageUTF8Text(t *testing.T) {
	t.Parallel()
	link := "https://auth.example.com/api/v1/magic/verify?token=abc_DEF-123"
	m := &mail.Message{From: "a@example.com", To: "b@example.com", Subject: "Código",
		Text: "Olá ada@example.com, o seu código para a Loja Exemplo Ltda. é 123456 e expira em 10 minutos; ou abra " + link + "\n",
		HTML: "<p>Olá, código <b>123456</b></p>"}
	raw := string(m.Bytes())
	for _, want := range []string{"Content-Transfer-Encoding: 8bit", "é 123456 e expira", link, "Content-Transfer-Encoding: quoted-printable"} {
		if !strings.Contains(raw, want) {
			t.Fatalf("raw message lacks %q:\n%s", want, raw)
		}
	}
	m.Text = "Olá\x01 123456"
	if raw := string(m.Bytes()); strings.Contains(raw, "8bit") {
		t.Fatalf("a control character went 8bit:\n%s", raw)
	}
}
