package auth

import "net/url"

// returnHost is what the consent page of a client that registered
// itself names as the place the answer goes back to (docs/security.md,
// "OpenID Connect provider"): anyone may register a client under any
// name, so the name alone could pass for another application's, while
// the redirect URI cannot be chosen after the fact. It is an http(s)
// URI's host name (without the port: a loopback URI matches on any),
// or, for an app's own scheme (com.example.app:/callback), the scheme
// followed by a colon: what follows it is the app's to interpret.
func returnHost(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return redirectURI
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Hostname()
	}
	return u.Scheme + ":"
}
