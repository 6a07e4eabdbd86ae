package auth

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/schema"

	"latchkey/store"
)

// The provider's parsers (docs/development.md, "Fuzzing"): the
// authorization request as latchkey reads it after op's decoding, the
// sign-in pages' form bodies, the forward-auth sign-in's rd, and the
// clients' claims mapping from user metadata.

// FuzzOIDCAuthorizeQuery decodes an authorization request's query as
// op does (its schema decoder, unknown keys ignored) and checks it by
// latchkey's rules for a public and a confidential client: never a
// panic; what is accepted keeps state, nonce and login_hint as short
// text, PKCE S256 only (required from the public client), only scopes
// the client may ask for, and a record the store's JSON codec carries
// unchanged.
func FuzzOIDCAuthorizeQuery(f *testing.F) {
	seeds(f, "oidc_authorize.txt")
	dec := schema.NewDecoder()
	dec.IgnoreUnknownKeys(true)
	clients := []*store.OIDCClient{
		{ID: "pub", Type: ClientPublic, Scopes: []string{"openid", "email", "offline_access"}},
		{ID: "conf", Type: ClientConfidential, Scopes: ProviderScopes},
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, query string) {
		form, err := url.ParseQuery(query)
		if err != nil {
			return // op answers invalid_request
		}
		req := new(oidc.AuthRequest)
		if dec.Decode(req, form) != nil {
			return // op answers invalid_request
		}
		for _, c := range clients {
			r, err := newAuthRequest("p", req, c, "", now)
			if err != nil {
				if _, ok := err.(*oidc.Error); !ok {
					t.Fatalf("refusal %T %v, want an *oidc.Error (an error redirect)", err, err)
				}
				continue
			}
			for _, v := range []string{r.State, r.Nonce, r.LoginHint} {
				if len(v) > maxOIDCParam || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
					t.Fatalf("kept %q", v)
				}
			}
			if r.CodeChallenge != "" && r.CodeChallengeMethod != string(oidc.CodeChallengeMethodS256) {
				t.Fatalf("kept PKCE method %q", r.CodeChallengeMethod)
			}
			if c.Type == ClientPublic && r.CodeChallenge == "" {
				t.Fatal("a public client without PKCE")
			}
			for _, sc := range r.Scopes {
				if !slices.Contains(c.Scopes, sc) {
					t.Fatalf("scope %q the client may not ask for (%v)", sc, c.Scopes)
				}
			}
			if r.ResponseMode != "" && r.ResponseMode != "query" && r.ResponseMode != "form_post" {
				t.Fatalf("response_mode %q", r.ResponseMode)
			}
			raw, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back store.OIDCAuthRequest
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("the record does not decode: %v", err)
			}
			again, _ := json.Marshal(&back)
			if !bytes.Equal(raw, again) {
				t.Fatalf("the record changes through the codec:\n%s\n%s", raw, again)
			}
		}
	})
}

// FuzzOIDCPageForm reads a sign-in page's form body as the pages do:
// the CSRF token passes only when it is the browser's for the form's
// request, the device page's user code is a code of the alphabet or
// refused (and normal once read), and no field panics.
func FuzzOIDCPageForm(f *testing.F) {
	seeds(f, "oidc_forms.txt")
	keys, err := store.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	s := &Service{keys: keys}
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return // the page answers 400
		}
		id, csrf := form.Get("authRequestID"), form.Get("csrf")
		for _, browser := range []string{"", "browser-secret"} {
			ok := s.OIDCFormTokenValid(browser, id, csrf)
			if ok != (browser != "" && csrf == s.OIDCFormToken(browser, id)) {
				t.Fatalf("CSRF check %v for browser %q id %q token %q", ok, browser, id, csrf)
			}
		}
		if code, ok := OIDCDeviceUserCode(form.Get("user_code")); ok {
			if len(code) != userCodeLen+1 || code[userCodeLen/2] != '-' {
				t.Fatalf("user code %q", code)
			}
			for i, r := range code {
				if i != userCodeLen/2 && !strings.ContainsRune(userCodeChars, r) {
					t.Fatalf("user code %q", code)
				}
			}
			if again, ok := OIDCDeviceUserCode(code); !ok || again != code {
				t.Fatalf("user code %q reads as %q %v", code, again, ok)
			}
		}
		if e, err := NormalizeEmail(form.Get("email")); err == nil && (e == "" || strings.ContainsAny(e, " \r\n")) {
			t.Fatalf("email %q", e)
		}
	})
}

// FuzzForwardAuthRD checks the forward-auth sign-in's return address as
// the sign-in page does (ForwardAuthSignInTarget): an address it accepts
// is http or https without credentials, and its host, as a browser reads
// it, is the cookie domain or under it: the page never sends a browser
// elsewhere.
func FuzzForwardAuthRD(f *testing.F) {
	seeds(f, "forward_rd.txt")
	const domain = "example.com"
	f.Fuzz(func(t *testing.T, rd string) {
		u, err := url.Parse(rd)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" {
			return
		}
		host, ok := forwardedHost(u.Host)
		if !ok || !hostUnder(host, domain) {
			return
		}
		// What the browser follows is the re-encoded URL.
		back, err := url.Parse(u.String())
		if err != nil {
			t.Fatalf("accepted %q re-encodes as %q, which does not parse: %v", rd, u.String(), err)
		}
		seen := strings.TrimSuffix(strings.ToLower(back.Hostname()), ".")
		if back.User != nil || !hostUnder(seen, domain) {
			t.Fatalf("accepted %q: the browser goes to host %q", rd, back.Host)
		}
	})
}

// FuzzOIDCClaims checks a client's claims mapping and applies it to a
// user's metadata as the tokens do: a mapping accepted names a metadata
// key; the claims made are the mapped names only, each a JSON value of
// the metadata, never null; nothing panics.
func FuzzOIDCClaims(f *testing.F) {
	seeds(f, "oidc_claims.txt")
	f.Fuzz(func(t *testing.T, line string) {
		name, rest, _ := strings.Cut(line, "\t")
		src, meta, _ := strings.Cut(rest, "\t")
		claims, err := clientClaims(map[string]string{name: src})
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("refusal %T %v, want a VALIDATION_ERROR", err, err)
			}
			return
		}
		if !strings.HasPrefix(claims[name], "metadata.") {
			t.Fatalf("accepted %q", src)
		}
		out := clientClaimValues(&store.OIDCClient{Claims: claims}, &store.User{Metadata: json.RawMessage(meta)})
		for k, v := range out {
			raw, _ := v.(json.RawMessage)
			if k != name || !json.Valid(raw) || string(raw) == "null" {
				t.Fatalf("claim %q=%s from %q", k, raw, meta)
			}
		}
	})
}
