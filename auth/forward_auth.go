package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"

	"latchkey/store"
)

// Forward-auth (docs/forward-auth.md): apps that speak nothing but
// HTTP, behind a reverse proxy (nginx auth_request, Caddy forward_auth,
// Traefik ForwardAuth) that asks latchkey, for each request, whether
// it may pass. A project's forwardAuth holds the domain of its cookie
// and its rules; the cookie holds a session token of the project (a
// session like any other: listed, revoked, ended by sign-out), set by
// the sign-in pages under the project's issuer. The check reads the
// project from its cache (which every replica's feed invalidates) and
// the session as every session check does.

// The policies of a forward-auth rule.
const (
	// ForwardAuthBypass lets every request through, signed in or not.
	ForwardAuthBypass = "bypass"
	// ForwardAuthSignedIn needs a signed-in user of the project.
	ForwardAuthSignedIn = "signed_in"
	// ForwardAuthMFA needs a signed-in user whose session proved a
	// second factor (TOTP or SMS).
	ForwardAuthMFA = "mfa"
)

// Limits of a project's forward-auth settings.
const (
	// MaxForwardAuthRules is how many rules a project may have.
	MaxForwardAuthRules = 100
	// maxPathPrefix is the longest pathPrefix, in bytes.
	maxPathPrefix = 1024
)

// Paths of forward-auth's pages, under the project's issuer.
const (
	// ForwardAuthSignInPath is the sign-in page of a proxied app
	// (?rd=<the original URL>): nginx's error_page 401 points there,
	// and the check's redirects go there.
	ForwardAuthSignInPath = "/signin"
	// ForwardAuthCodePath takes the emailed code.
	ForwardAuthCodePath = "/signin/code"
	// ForwardAuthSecondFactorPath takes the second factor's code: the
	// authenticator app's, one texted to the phone, or a backup code.
	ForwardAuthSecondFactorPath = "/signin/mfa"
	// ForwardAuthLogoutPath ends the browser's session (?rd= where to
	// go next, under the cookie domain); it is the providers'
	// end-session endpoint too (OIDCLogoutPath).
	ForwardAuthLogoutPath = "/logout"
)

// forwardAuthMethod is the method of a session signed in by
// forward-auth's pages.
const forwardAuthMethod = "forward-auth"

// Forward-auth's refusals (docs/api.md, "Forward-auth").
var (
	// ErrUntrustedProxy: the check was called by an address that is
	// not a trusted proxy, whose X-Forwarded-* headers are ignored.
	ErrUntrustedProxy = newErr("UNTRUSTED_PROXY", "", "This endpoint answers reverse proxies only, and this request did not come from an address in --trusted-proxies: its X-Forwarded-* headers are ignored. Add the proxy's address to --trusted-proxies.")
	// ErrForwardedHeaders: a trusted proxy did not say which request it
	// asks about.
	ErrForwardedHeaders = newErr("FORWARDED_HEADERS_MISSING", CatValidation, "The proxy must send X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-Uri (or nginx's X-Original-URL).")
	// ErrSignInRequired: the request needs a signed-in user (or a
	// second factor) its cookie does not give.
	ErrSignInRequired = newErr("SIGN_IN_REQUIRED", "", "Sign in to continue.")
	// ErrAccessDenied: no rule allows the request, or the user is in
	// none of the rule's groups.
	ErrAccessDenied = newErr("ACCESS_DENIED", "", "No access rule of this project allows this address.")
)

// Refusals of a forward-auth sign-in page's target: a project without
// forward-auth, and an address to return to outside its cookie domain.
var (
	errNoForwardAuth        = ErrAccessDenied.With("This project does not protect apps behind a proxy.")
	errReturnNotUnderDomain = ErrInvalidRedirect.With("The address to return to is not under this project's forward-auth cookie domain, so this page does not send you there. Open the application you want to use again.")
)

// errNoForwardSecondFactor: a rule requires a second factor the user
// has not enrolled (enrolling on the pages comes later).
var errNoForwardSecondFactor = ErrStepUpRequired.With("This address requires a second factor (an authenticator app or a phone), and this account has none. Add one in your account settings, then sign in again.")

// parseForwardAuth checks a forwardAuth value as a request sends it
// (raw is not nil: the field was given): an object with cookieDomain
// and rules, or null to remove forward-auth. Hosts and the cookie
// domain are lowercased, the leading dot of the domain dropped, groups
// sorted without repeats.
func parseForwardAuth(raw json.RawMessage) (*store.ForwardAuth, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var in struct {
		CookieDomain *string `json:"cookieDomain"`
		Rules        *[]struct {
			Host       *string         `json:"host"`
			PathPrefix *string         `json:"pathPrefix"`
			Policy     *string         `json:"policy"`
			Groups     json.RawMessage `json:"groups"`
		} `json:"rules"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, Invalid("forwardAuth must be an object with cookieDomain and rules, or null to remove it.")
	}
	if in.CookieDomain == nil || in.Rules == nil {
		return nil, Invalid("forwardAuth needs cookieDomain and rules (an array, [] to deny every request).")
	}
	domain := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(*in.CookieDomain)), ".")
	if !domainName(domain) {
		return nil, Invalid("forwardAuth.cookieDomain must be a domain name (example.com, or .example.com), not an address: the sign-in cookie is set for it.")
	}
	if len(*in.Rules) > MaxForwardAuthRules {
		return nil, Invalid("forwardAuth.rules holds at most %d rules.", MaxForwardAuthRules)
	}
	out := &store.ForwardAuth{CookieDomain: domain, Rules: make([]store.ForwardAuthRule, 0, len(*in.Rules))}
	for i, r := range *in.Rules {
		var rule store.ForwardAuthRule
		if r.Host == nil || strings.TrimSpace(*r.Host) == "" {
			return nil, Invalid("forwardAuth.rules[%d].host is required: a rule without a host can never match.", i)
		}
		rule.Host = strings.ToLower(strings.TrimSpace(*r.Host))
		name := strings.TrimPrefix(rule.Host, "*.")
		if !domainName(name) {
			return nil, Invalid("forwardAuth.rules[%d].host must be a host name, or *. and a domain for every host under it (no port, no path).", i)
		}
		if name != domain && !strings.HasSuffix(name, "."+domain) {
			return nil, Invalid("forwardAuth.rules[%d].host %s is not under the cookie domain %s: the sign-in cookie would never reach it.", i, quoteClipped(rule.Host), domain)
		}
		if r.PathPrefix != nil && *r.PathPrefix != "" {
			p := *r.PathPrefix
			if !strings.HasPrefix(p, "/") || len(p) > maxPathPrefix || strings.ContainsAny(p, "?# \t\r\n") || cleanPath(p) != p {
				return nil, Invalid("forwardAuth.rules[%d].pathPrefix must start with / and be a clean path (no . or .. segments, no query, at most %d bytes).", i, maxPathPrefix)
			}
			rule.PathPrefix = p
		}
		if r.Policy == nil {
			return nil, Invalid(`forwardAuth.rules[%d].policy is required: "bypass", "signed_in" or "mfa".`, i)
		}
		switch *r.Policy {
		case ForwardAuthBypass, ForwardAuthSignedIn, ForwardAuthMFA:
			rule.Policy = *r.Policy
		default:
			return nil, Invalid(`forwardAuth.rules[%d].policy must be "bypass", "signed_in" or "mfa".`, i)
		}
		if r.Groups != nil && string(r.Groups) != "null" {
			groups, err := parseGroups(r.Groups)
			if err != nil {
				return nil, Invalid("forwardAuth.rules[%d].%s.", i, err.Error())
			}
			if groups != nil && rule.Policy == ForwardAuthBypass {
				return nil, Invalid("forwardAuth.rules[%d] has groups and policy bypass: a bypass rule admits everyone, so its groups would never be checked.", i)
			}
			rule.Groups = groups
		}
		out.Rules = append(out.Rules, rule)
	}
	return out, nil
}

// domainName reports whether d is a lowercase DNS name (labels of a-z,
// 0-9 and '-', not starting or ending with '-'), not an IP address.
func domainName(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(d); err == nil {
		return false
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// cleanPath returns p (a path, percent-decoded) with . and ..
// segments resolved and repeated slashes folded, keeping a final
// slash; "/" for an empty path.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if isCleanPath(p) {
		return p
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// hostUnder reports whether host (lowercase, without a port) is
// domain or a host under it.
func hostUnder(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// ruleMatches reports whether r covers host (lowercase, no port) and
// p (a clean path).
func ruleMatches(r *store.ForwardAuthRule, host, p string) bool {
	if name, ok := strings.CutPrefix(r.Host, "*."); ok {
		if !strings.HasSuffix(host, "."+name) {
			return false
		}
	} else if host != r.Host {
		return false
	}
	return r.PathPrefix == "" || strings.HasPrefix(p, r.PathPrefix)
}

// forwardRule returns the first rule of fa covering host and p; nil
// when none does.
func forwardRule(fa *store.ForwardAuth, host, p string) *store.ForwardAuthRule {
	if fa == nil {
		return nil
	}
	for i := range fa.Rules {
		if ruleMatches(&fa.Rules[i], host, p) {
			return &fa.Rules[i]
		}
	}
	return nil
}

// ForwardedRequest is the request a proxy asks about: its scheme
// (http or https), host (with a port, maybe) and request URI (path and
// query).
type ForwardedRequest struct {
	Proto, Host, URI string
}

// URL returns the original URL.
func (f ForwardedRequest) URL() string { return f.Proto + "://" + f.Host + f.URI }

// ParseForwardedRequest checks what a proxy sent (400
// FORWARDED_HEADERS_MISSING, naming what is wrong): proto http or
// https, a host name or address with an optional port, a URI starting
// with /.
func ParseForwardedRequest(proto, host, uri string) (ForwardedRequest, error) {
	var missing []string
	if proto == "" {
		missing = append(missing, "X-Forwarded-Proto")
	}
	if host == "" {
		missing = append(missing, "X-Forwarded-Host")
	}
	if uri == "" {
		missing = append(missing, "X-Forwarded-Uri")
	}
	if len(missing) > 0 {
		return ForwardedRequest{}, ErrForwardedHeaders.With("The proxy did not send " + strings.Join(missing, ", ") +
			": configure it to send X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-Uri (or nginx's X-Original-URL).")
	}
	proto = strings.ToLower(proto)
	if proto != "http" && proto != "https" {
		return ForwardedRequest{}, ErrForwardedHeaders.With("X-Forwarded-Proto must be http or https.")
	}
	if _, ok := forwardedHost(host); !ok {
		return ForwardedRequest{}, ErrForwardedHeaders.With("X-Forwarded-Host must be a host name, with a port or without.")
	}
	if !strings.HasPrefix(uri, "/") || strings.ContainsAny(uri, " \t\r\n") {
		return ForwardedRequest{}, ErrForwardedHeaders.With("X-Forwarded-Uri must be the request's path, starting with /.")
	}
	return ForwardedRequest{Proto: proto, Host: strings.ToLower(host), URI: uri}, nil
}

// ParseOriginalURL reads nginx's X-Original-URL (scheme://host/uri) as
// a ForwardedRequest. nginx writes it from the Host header as the
// browser sent it ($http_host) and the request's target ($request_uri,
// which starts with /): the host is all up to the first /, and must be
// a host name (a Host header that ends with '?' or '#' would otherwise
// move the whole path into a query or a fragment, under the rule of
// the path /), and the target is taken as it is: a '#' in it is no
// fragment but a character of the path the app is asked for (Go's
// servers and others read it so).
func ParseOriginalURL(raw string) (ForwardedRequest, error) {
	if scheme, host, uri, ok := originalURLPlain(raw); ok {
		return ParseForwardedRequest(scheme, host, uri)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return ForwardedRequest{}, ErrForwardedHeaders.With("X-Original-URL must be the original request's absolute URL (http or https).")
	}
	_, rest, _ := strings.Cut(raw, "://")
	host, target := rest, "/"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, target = rest[:i], rest[i:]
	}
	if _, ok := forwardedHost(host); !ok {
		return ForwardedRequest{}, ErrForwardedHeaders.With("X-Original-URL's host must be a host name, with a port or without.")
	}
	return ParseForwardedRequest(u.Scheme, host, target)
}

// ParseForwardedHeaders reads which request a trusted proxy asks
// about from its headers: nginx's X-Original-URL (originalURL; nginx is
// true) or else X-Forwarded-Proto, -Host and -Uri (400
// FORWARDED_HEADERS_MISSING, naming what is wrong, when they do not
// name a request). A proxy passes on the browser's other headers as
// they are: Caddy and Traefik set the X-Forwarded-* headers themselves
// and pass a browser's X-Original-URL on, nginx sets X-Original-URL and
// passes a browser's X-Forwarded-* on. So when both X-Original-URL and
// X-Forwarded-Uri come, one of them may be the browser's: they must
// name the same request, or the check answers 400 rather than believe
// either (a forged X-Original-URL naming a bypass path must not open
// the app behind Caddy).
func ParseForwardedHeaders(originalURL, proto, host, uri string) (f ForwardedRequest, nginx bool, err error) {
	if originalURL == "" {
		f, err = ParseForwardedRequest(proto, host, uri)
		return f, false, err
	}
	if f, err = ParseOriginalURL(originalURL); err != nil {
		return ForwardedRequest{}, true, err
	}
	if uri != "" {
		g, err := ParseForwardedRequest(proto, host, uri)
		if err != nil {
			return ForwardedRequest{}, true, err
		}
		if g != f {
			return ForwardedRequest{}, true, ErrForwardedHeaders.With("X-Original-URL and X-Forwarded-Proto, -Host and -Uri name different requests: " +
				"one of them came from the browser through the proxy. Configure the proxy to set the headers it sends and drop the browser's " +
				"(nginx: X-Original-URL only; Caddy, Traefik: X-Forwarded-* only).")
		}
	}
	return f, true, nil
}

// forwardedHost returns host's name without its port, lowercase and
// without a final dot; false when it is not a host.
func forwardedHost(host string) (string, bool) {
	h := host
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		if hh, port, err := net.SplitHostPort(h); err == nil {
			if strings.Trim(port, "0123456789") != "" || len(port) > 5 {
				return "", false // a port of digits, or none
			}
			h = hh
		}
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" || strings.ContainsAny(h, "/?#@ \t\r\n\\") {
		return "", false
	}
	return h, true
}

// forwardedPath returns the clean, percent-decoded path of uri (no
// query), or false when it cannot be decoded: rules see the path the
// app will, so /public/../admin is /admin. When servers may read the
// path differently, alt is the other reading (servletPath), else "".
func forwardedPath(uri string) (p, alt string, ok bool) {
	p, _, _ = strings.Cut(uri, "?")
	dec, err := url.PathUnescape(p)
	if err != nil {
		return "", "", false
	}
	p = cleanPath(dec)
	if strings.ContainsAny(dec, ";\\") {
		if a := servletPath(dec); a != p {
			alt = a
		}
	}
	return p, alt, true
}

// servletPath is how Java servlet containers (Tomcat, Jetty) and
// servers that take a backslash for a slash read a decoded path: each
// segment's ";parameters" dropped and a backslash a separator, then . and ..
// resolved. /public/..;/admin is /admin to them, while nginx or a file
// server reads a directory named "..;" under /public.
func servletPath(dec string) string {
	segs := strings.Split(strings.ReplaceAll(dec, "\\", "/"), "/")
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ";")
	}
	return cleanPath(strings.Join(segs, "/"))
}

// headerText returns name as a header's value may carry it: each
// control character or line separator (a tab, a vertical tab, U+0085,
// U+2028, U+2029, which a user's name may hold) a space, and each
// bidirectional embedding, override or isolate (U+202A–U+202E,
// U+2066–U+2069: a name shown by the app or in its logs could otherwise
// reorder what follows it) too. A name without one is returned as it
// is, with no allocation.
func headerText(name string) string {
	if strings.IndexFunc(name, notHeaderText) < 0 {
		return name
	}
	return strings.Map(func(r rune) rune {
		if notHeaderText(r) {
			return ' '
		}
		return r
	}, name)
}

// notHeaderText reports whether r has no place in a header's value.
func notHeaderText(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		'\u202a' <= r && r <= '\u202e' || '\u2066' <= r && r <= '\u2069'
}

// ForwardIdentity is who a forward-auth check let through, for the
// Remote-* headers.
type ForwardIdentity struct {
	UserID, Email, Name string
	Groups              []string
}

// ForwardAuthCheck answers a proxy about request f for projectID's
// forward-auth, with cookie the value of the project's forward-auth
// cookie ("" without): the identity of the signed-in user when a rule
// lets the request through (the zero identity, UserID "", for a bypass
// rule; a value, so that the check allocates none), 401
// SIGN_IN_REQUIRED when it needs a sign-in or a second factor the
// cookie does not give, 403 ACCESS_DENIED when no rule covers it or
// the user is in none of its groups, 404 PROJECT_NOT_FOUND. The
// project comes from the project cache; the session is checked as
// every session token is (GET /session's check), whose state names the
// user: no transaction for a session the store knows.
func (s *Service) ForwardAuthCheck(ctx context.Context, projectID string, f ForwardedRequest, cookie string) (ForwardIdentity, error) {
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return ForwardIdentity{}, err
	}
	if raw, _, _ := strings.Cut(f.URI, "?"); strings.IndexByte(raw, '#') >= 0 {
		// Browsers never send a fragment. Some servers read a '#' in
		// the path as a character, so /public/#/../admin is /admin to
		// them, others as the fragment's start: neither is believed.
		return ForwardIdentity{}, ErrAccessDenied.With("This address's path holds a '#', which browsers never send, and which servers read differently.")
	}
	host, ok := forwardedHost(f.Host)
	pth, alt, ok2 := forwardedPath(f.URI)
	if !ok || !ok2 {
		return ForwardIdentity{}, ErrForwardedHeaders.With("X-Forwarded-Host or X-Forwarded-Uri could not be read.")
	}
	rule := forwardRule(p.ForwardAuth, host, pth)
	if rule == nil {
		return ForwardIdentity{}, ErrAccessDenied
	}
	if alt != "" && forwardRule(p.ForwardAuth, host, alt) != rule {
		// The app behind may read the path another way, under another
		// rule (a bypass path opening an admin one): neither is believed.
		return ForwardIdentity{}, ErrAccessDenied.With("This address's path reads differently to different servers (a ; or \\ beside a . or .. segment), under different access rules.")
	}
	if rule.Policy == ForwardAuthBypass {
		return ForwardIdentity{}, nil
	}
	tok := strings.TrimSpace(cookie) // as a bearer header's token is read
	if tok == "" {
		return ForwardIdentity{}, ErrSignInRequired
	}
	pr, _, st, now, err := s.authenticateToken(ctx, tok)
	if err != nil {
		if e := AsError(err); e.Is(ErrUnavailable) || e.Code == ErrInternal.Code {
			return ForwardIdentity{}, err
		}
		return ForwardIdentity{}, ErrSignInRequired
	}
	if pr.ProjectID != p.ID {
		return ForwardIdentity{}, ErrSignInRequired
	}
	s.activity.seen(pr.SessionID, pr.IssuedAt, now)
	if secondFactorPending(st.Proofs, store.Enrolled{TOTP: st.TOTP, SMS: st.SMS}) ||
		(rule.Policy == ForwardAuthMFA && !secondFactorProven(st.Proofs)) {
		return ForwardIdentity{}, ErrSignInRequired.With("This address requires a second factor: sign in with it.")
	}
	// Who the user is comes with the session's state, from the store's
	// memory (a user's change drops it there; disabling or deleting a
	// user deletes the sessions).
	if len(rule.Groups) > 0 && !slices.ContainsFunc(st.Groups, func(g string) bool { return slices.Contains(rule.Groups, g) }) {
		return ForwardIdentity{}, ErrAccessDenied.With("This account is not in a group this address admits.")
	}
	return ForwardIdentity{UserID: pr.UserID, Email: st.Email, Name: headerText(st.Name), Groups: st.Groups}, nil
}

// ForwardAuthTarget is a sign-in for a proxied app: the project and
// where the browser goes once signed in.
type ForwardAuthTarget struct {
	Project *store.Project
	// RD is the original URL, under the cookie domain.
	RD string
	// CookieDomain is the domain of the forward-auth cookie.
	CookieDomain string
	rule         *store.ForwardAuthRule
	// method is the sign-in's session method: forward-auth's, or the
	// account page's (AccountSignInTarget).
	method string
}

// ForwardAuthSignInTarget checks rd, where a sign-in for projectID's
// proxied apps returns to: an http or https URL whose host is the
// project's cookie domain or under it (400 INVALID_REDIRECT_URL
// otherwise: the pages never send a browser elsewhere); 404
// PROJECT_NOT_FOUND, or 403 ACCESS_DENIED when the project has no
// forward-auth. The project's account page is a target of every
// project (AccountSignInTarget).
func (s *Service) ForwardAuthSignInTarget(ctx context.Context, projectID, rd string) (*ForwardAuthTarget, error) {
	if rd == s.OIDCIssuer(projectID)+AccountPath {
		return s.AccountSignInTarget(ctx, projectID)
	}
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	if p.ForwardAuth == nil {
		return nil, errNoForwardAuth
	}
	refused := errReturnNotUnderDomain
	if rd == "" || len(rd) > 4096 {
		return nil, refused
	}
	u, err := url.Parse(rd)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" {
		return nil, refused
	}
	host, ok := forwardedHost(u.Host)
	if !ok || !hostUnder(host, p.ForwardAuth.CookieDomain) {
		return nil, refused
	}
	pth, _, _ := forwardedPath(u.EscapedPath())
	return &ForwardAuthTarget{Project: p, RD: u.String(), CookieDomain: p.ForwardAuth.CookieDomain,
		rule: forwardRule(p.ForwardAuth, host, pth), method: forwardAuthMethod}, nil
}

// ForwardAuthContinue tells what the sign-in for target does next with
// the browser's session pr (nil: none): sign in, prove a second factor
// (the user has TOTP or SMS enrolled and the session proved neither,
// or target's rule has policy mfa), or go back to the app. A rule that
// needs a second factor the user has not enrolled is 403
// STEP_UP_REQUIRED, with words saying so.
func (s *Service) ForwardAuthContinue(ctx context.Context, t *ForwardAuthTarget, pr *Principal) (OIDCStep, error) {
	if pr == nil || pr.ProjectID != t.Project.ID {
		return OIDCStepSignIn, nil
	}
	st, err := s.db.SessionState(ctx, pr.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return OIDCStepSignIn, nil
	} else if err != nil {
		return OIDCStepSignIn, internal(err)
	}
	if st.UserID != pr.UserID {
		return OIDCStepSignIn, nil
	}
	mfa := t.rule != nil && t.rule.Policy == ForwardAuthMFA
	if secondFactorPending(st.Proofs, store.Enrolled{TOTP: st.TOTP, SMS: st.SMS}) || (mfa && !secondFactorProven(st.Proofs)) {
		if !st.TOTP && !st.SMS {
			return OIDCStepSignIn, errNoForwardSecondFactor
		}
		return OIDCStepSecondFactor, nil
	}
	return OIDCStepDone, nil
}

// ForwardAuthSendCode emails a sign-in code for target: SendOTP's
// checks, throttles and events.
func (s *Service) ForwardAuthSendCode(ctx context.Context, t *ForwardAuthTarget, email string, m Meta) error {
	return s.SendOTP(ctx, t.Project, email, m)
}

// ForwardAuthVerifyCode checks an emailed code and signs the user in
// (VerifyOTP's checks, lockouts and events): a new session of method
// "forward-auth" ("account" for the account page's sign-in), proven by the code, without a refresh token (the
// cookie holds the session's token).
func (s *Service) ForwardAuthVerifyCode(ctx context.Context, t *ForwardAuthTarget, email, code string, m Meta) (*Login, error) {
	return s.verifyOTP(ctx, t.Project, OTPInput{Email: email, Code: code}, m,
		loginAs{method: t.method, proof: amrOTP, noRefresh: true})
}

// ForwardAuthFormToken returns the CSRF token of forward-auth's forms
// for target rd in the browser whose CSRF cookie holds browser (the
// hosted pages' keyed hash, bound to rd).
func (s *Service) ForwardAuthFormToken(browser, rd string) string {
	return s.OIDCFormToken(browser, "forward-auth\x00"+rd)
}

// ForwardAuthFormTokenValid reports whether token is the CSRF token of
// rd for browser (constant-time compare).
func (s *Service) ForwardAuthFormTokenValid(browser, rd, token string) bool {
	return s.OIDCFormTokenValid(browser, "forward-auth\x00"+rd, token)
}
