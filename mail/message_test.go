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
