package auth

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"latchkey/store"
)

// A project's branding of its hosted pages (docs/oidc.md, "Branding and
// languages"): the name they show, a logo and an accent colour. The
// logo is an https address the browser loads itself: the pages'
// Content-Security-Policy admits its origin alone, and only when a logo
// is set.

// Branding limits: characters of displayName, bytes of logoUrl.
const (
	maxDisplayName = 100
	maxLogoURL     = 2048
)

// accentColor is the form of accentColor: "#rrggbb".
var accentColor = lazyRegexp(`^#[0-9a-fA-F]{6}$`)

// applyBranding validates in's branding fields and copies them onto p:
// displayName 1 to 100 characters on one line, logoUrl an https URL of
// at most 2048 bytes without credentials or fragment, accentColor
// "#rrggbb" (kept in lower case); "" removes each. Errors: 400
// VALIDATION_ERROR.
func (in *ProjectInput) applyBranding(p *store.Project) error {
	if in.DisplayName != nil {
		n := strings.TrimSpace(*in.DisplayName)
		if utf8.RuneCountInString(n) > maxDisplayName || !utf8.ValidString(n) || strings.IndexFunc(n, unicode.IsControl) >= 0 {
			return Invalid("displayName must be at most %d characters on one line.", maxDisplayName)
		}
		p.DisplayName = n
	}
	if in.LogoURL != nil {
		u := strings.TrimSpace(*in.LogoURL)
		if u != "" {
			if _, err := logoOrigin(u); err != nil {
				return err
			}
		}
		p.LogoURL = u
	}
	if in.AccentColor != nil {
		c := *in.AccentColor
		if c != "" && !accentColor().MatchString(c) {
			return Invalid(`accentColor must be a colour "#rrggbb", such as "#2456d6".`)
		}
		p.AccentColor = strings.ToLower(c)
	}
	return nil
}

// logoOrigin returns the origin (https://host[:port]) of a logo's
// address, or 400 VALIDATION_ERROR when it is not an https URL of at
// most maxLogoURL bytes without credentials or fragment.
func logoOrigin(raw string) (string, error) {
	bad := Invalid("logoUrl must be an https URL of at most %d characters.", maxLogoURL)
	if len(raw) > maxLogoURL || strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", bad
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Fragment != "" {
		return "", bad
	}
	o, ok := canonicalOrigin(u)
	if !ok || strings.ContainsAny(o, ";,'\"") {
		return "", bad
	}
	return o, nil
}
