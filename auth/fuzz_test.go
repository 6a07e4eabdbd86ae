package auth

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// seeds adds each line of testdata/auth/name as a fuzz seed.
func seeds(f *testing.F, name string) {
	file, err := os.Open("../testdata/auth/" + name)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		f.Add(sc.Text())
	}
}

func FuzzParseAPIKey(f *testing.F) {
	seeds(f, "apikeys.txt")
	f.Fuzz(func(t *testing.T, key string) {
		prefix, err := ParseAPIKey(key)
		if err != nil {
			if err != ErrInvalidFormat {
				t.Fatalf("error %v, want INVALID_FORMAT", err)
			}
			return
		}
		if len(prefix) != KeyPrefixLen || !strings.HasPrefix(key, prefix) {
			t.Fatalf("prefix %q of %q", prefix, key)
		}
		if !strings.HasPrefix(prefix, LivePrefix) && !strings.HasPrefix(prefix, TestPrefix) {
			t.Fatalf("accepted %q without a live/test prefix", key)
		}
		if _, ok := ParseBearer("Bearer " + key); !ok && strings.TrimSpace(key) != "" {
			t.Fatalf("ParseBearer refused %q", key)
		}
	})
}

func FuzzNormalizeOrigin(f *testing.F) {
	seeds(f, "origins.txt")
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := NormalizeOrigin(raw)
		if err != nil {
			return
		}
		// Canonical forms are fixed points and pass their own redirect check.
		again, err := NormalizeOrigin(o)
		if err != nil || again != o {
			t.Fatalf("NormalizeOrigin(%q)=%q, again %q %v", raw, o, again, err)
		}
		if !CheckRedirect(o+"/x", []string{o}) {
			t.Fatalf("origin %q refuses its own path", o)
		}
		if strings.ContainsAny(o, "@\\ ?#") {
			t.Fatalf("origin %q holds a forbidden character", o)
		}
	})
}

func FuzzCheckRedirect(f *testing.F) {
	seeds(f, "redirects.txt")
	allowed := []string{"http://localhost:3000", "https://app.example", "http://[::1]:8080"}
	// The spellings of each allowed origin a browser treats as that
	// origin: the canonical one and, for https, the explicit default port.
	spellings := []string{"http://localhost:3000", "https://app.example:443", "https://app.example", "http://[::1]:8080"}
	f.Fuzz(func(t *testing.T, raw string) {
		if !CheckRedirect(raw, allowed) {
			return
		}
		// Anything accepted must, as a browser parses it, go to an
		// allowed origin: it is that origin's spelling followed by the
		// end, a path, a query or a fragment, and holds no character a
		// browser would strip or read as part of the authority.
		lower := strings.ToLower(raw)
		ok := false
		for _, s := range spellings {
			if strings.HasPrefix(lower, s) {
				rest := lower[len(s):]
				if rest == "" || strings.ContainsAny(rest[:1], "/?#") {
					ok = true
					break
				}
			}
		}
		if !ok {
			t.Fatalf("accepted %q", raw)
		}
		if strings.ContainsAny(raw, "\\\t\r\n ") {
			t.Fatalf("accepted %q with a character browsers strip or rewrite", raw)
		}
		for _, a := range allowed {
			if a == raw && !CheckRedirect(a+"/", allowed) {
				t.Fatalf("origin %q accepted but not with a path", a)
			}
		}
	})
}

func FuzzNormalizeEmail(f *testing.F) {
	seeds(f, "emails.txt")
	f.Fuzz(func(t *testing.T, raw string) {
		e, err := NormalizeEmail(raw)
		if err != nil {
			return
		}
		if e != strings.ToLower(strings.TrimSpace(raw)) {
			t.Fatalf("NormalizeEmail(%q)=%q changed more than case and space", raw, e)
		}
		if len(e) > MaxEmailLength || strings.Count(e, "@") != 1 {
			t.Fatalf("accepted %q", e)
		}
		for i := 0; i < len(e); i++ {
			if e[i] < 0x21 || e[i] > 0x7e {
				t.Fatalf("accepted non-printable or non-ASCII %q", e)
			}
		}
		if again, err := NormalizeEmail(e); err != nil || again != e {
			t.Fatalf("not a fixed point: %q", e)
		}
	})
}

// FuzzParseConfirm: the confirm/callback body parser answers every input
// with a body or INVALID_PAYLOAD, never panics, and what it accepts is a
// single JSON object whose required fields are non-empty strings equal to
// what encoding/json reads from the same bytes.
func FuzzParseConfirm(f *testing.F) {
	seeds(f, "confirm.txt")
	f.Fuzz(func(t *testing.T, raw string) {
		b, err := parseConfirm([]byte(raw), "method")
		if err != nil {
			if AsError(err).Code != "INVALID_PAYLOAD" {
				t.Fatalf("error %v, want INVALID_PAYLOAD", err)
			}
			return
		}
		if b.ExternalUserID == "" || b.Method == "" || b.VerifiedAt.IsZero() {
			t.Fatalf("accepted %q with empty required fields", raw)
		}
		var ref map[string]any
		if err := json.Unmarshal([]byte(raw), &ref); err != nil {
			t.Fatalf("accepted %q that encoding/json refuses: %v", raw, err)
		}
		if ref["externalUserId"] != b.ExternalUserID || ref["method"] != b.Method {
			t.Fatalf("parsed %+v from %q, encoding/json reads %v", b, raw, ref)
		}
		if email, _ := ref["email"].(string); email != b.Email {
			t.Fatalf("email %q from %q, encoding/json reads %q", b.Email, raw, email)
		}
		at, err := parseVerifiedAt(ref["verifiedAt"].(string))
		if err != nil || !at.Equal(b.VerifiedAt) {
			t.Fatalf("verifiedAt %v from %q", b.VerifiedAt, raw)
		}
	})
}
