// Package totp makes the RFC 6238 time-based one-time passwords of
// latchkey's step-up factor: new secrets with their otpauth URLs, the
// code of a time step, the match of a presented code against the steps
// around now, and the enrolment QR image. It keeps no state: auth stores
// the sealed secret and the last accepted step.
package totp

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
)

// Parameters: RFC 6238 with HMAC-SHA1, a 20-byte secret, 6 digits every
// 30 s, one step of skew either side (docs/api.md, "TOTP").
const (
	SecretSize = 20 // bytes of secret
	Period     = 30 // seconds per step
	Digits     = 6  // digits of a code
	Skew       = 1  // steps accepted either side of now's step
)

// Key is a new secret with its otpauth URL.
type Key struct {
	Secret []byte // SecretSize random bytes
	Base32 string // Secret in RFC 4648 base32 without padding, for manual entry
	URL    string // otpauth://totp/<issuer>:<account>?secret=…&issuer=…
}

// Generate returns a new random key labelled issuer:account (HMAC-SHA1,
// Digits digits, Period seconds).
func Generate(issuer, account string) (*Key, error) {
	secret := make([]byte, SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	b := b32.EncodeToString(secret)
	return &Key{Secret: secret, Base32: b, URL: URL(issuer, account, b)}, nil
}

// URL returns the otpauth URL (Google Authenticator's Key Uri Format) of
// a key: otpauth://totp/ISSUER:ACCOUNT?secret=…&issuer=ISSUER&algorithm=SHA1&digits=6&period=30.
// Issuer and account are escaped as URI components (everything but
// letters, digits and "-_.~" is percent-encoded, a space as %20) in the
// label and in the issuer parameter, so a name holding & + = / # ? % or
// a colon reads back whole with any URL parser; the colon between them
// is the only literal one.
func URL(issuer, account, base32Secret string) string {
	return "otpauth://totp/" + component(issuer) + ":" + component(account) +
		"?secret=" + base32Secret + "&issuer=" + component(issuer) +
		"&algorithm=SHA1&digits=" + strconv.Itoa(Digits) + "&period=" + strconv.Itoa(Period)
}

// component escapes s as a URI component. url.QueryEscape encodes every
// byte but the unreserved ones and turns a space into "+"; the literal
// "+" it leaves can only be a space (a "+" in s became %2B), so it is
// rewritten as %20, which authenticator apps read in paths and queries
// alike.
func component(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Step returns the number of the time step that holds t.
func Step(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - Period + 1) / Period
	}
	return s / Period
}

// Code returns the digits-long code of secret at step (RFC 4226 with the
// step as counter).
func Code(secret []byte, step int64, digits int) (string, error) {
	return hotp.GenerateCodeCustom(b32.EncodeToString(secret), uint64(step), hotp.ValidateOpts{
		Digits: otp.Digits(digits), Algorithm: otp.AlgorithmSHA1,
	})
}

// Match returns the newest step within Skew of now's step whose code is
// code, and whether there is one. Every candidate is compared in
// constant time; a code of the wrong length matches nothing.
func Match(secret []byte, code string, now time.Time) (int64, bool) {
	cur := Step(now)
	var found int64
	ok := false
	for step := cur - Skew; step <= cur+Skew; step++ {
		want, err := Code(secret, step, Digits)
		if err != nil {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			found, ok = step, true
		}
	}
	return found, ok
}
