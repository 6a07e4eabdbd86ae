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
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	ptotp "github.com/pquerna/otp/totp"
)

// Parameters (interface.md "TOTP enrollment", decisions.md §8).
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
	k, err := ptotp.Generate(ptotp.GenerateOpts{
		Issuer: issuer, AccountName: account, Period: Period, Secret: secret,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, err
	}
	return &Key{Secret: secret, Base32: k.Secret(), URL: k.URL()}, nil
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
