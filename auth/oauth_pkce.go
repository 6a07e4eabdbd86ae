package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// checkBinding checks an exchange's codeVerifier against the
// codeChallenge its sign-in was started with (RFC 7636, S256): both or
// neither. The app made the verifier and keeps it with the browser's
// session, so a code that reached another browser (a captured callback
// URL) meets a verifier that does not match.
func checkBinding(challenge, verifier string) error {
	switch {
	case challenge == "" && verifier == "":
		return nil
	case challenge == "":
		return ErrCodeNotBound.With("This sign-in was started without a codeChallenge.")
	case verifier == "":
		return ErrCodeNotBound.With("This sign-in was started with a codeChallenge: codeVerifier is required.")
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) != 1 {
		return ErrCodeNotBound
	}
	return nil
}

// isChallenge reports whether c has the form of a base64url SHA-256
// without padding: 43 characters of A-Z, a-z, 0-9, '-' and '_'.
func isChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !isAlnum(c[i]) && c[i] != '-' && c[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// isVerifier reports whether v is an RFC 7636 code verifier: 43 to 128
// unreserved characters.
func isVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '-' && c != '.' && c != '_' && c != '~' {
			return false
		}
	}
	return true
}
