// Package social is the HTTP side of OAuth 2.0 / OpenID Connect sign-in:
// the clients latchkey calls providers with, and GitHub's REST API,
// which has no ID token. Package auth holds the use cases and imports
// this package, as it imports totp; it makes no HTTP call of its own.
//
// Every call to a provider (discovery, token, userinfo, JWKS, GitHub's
// API) goes through the private-address guard webhooks use (package
// netguard): its clients refuse, at every connection, an address that
// is private, link-local (the cloud metadata address among them) or
// otherwise not public, and loopback unless the provider itself is on
// loopback (Context). The check is made on the address dialled, after
// name resolution, so a name that resolves elsewhere later (DNS
// rebinding) is refused all the same.
package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/internal/netguard"
)

// Timeout bounds each call to a provider.
const Timeout = 15 * time.Second

// GitHubEndpoints are where GitHub sign-in goes: its OAuth endpoints and
// its REST API. Tests point them at a server on loopback.
type GitHubEndpoints struct {
	AuthURL  string // https://github.com/login/oauth/authorize
	TokenURL string // https://github.com/login/oauth/access_token
	APIURL   string // https://api.github.com
}

// GitHub is GitHub's own endpoints.
var GitHub = GitHubEndpoints{
	AuthURL:  "https://github.com/login/oauth/authorize",
	TokenURL: "https://github.com/login/oauth/access_token",
	APIURL:   "https://api.github.com",
}

// Transport makes the calls to providers. The zero value (and a nil
// *Transport) uses guarded clients with Timeout and GitHub's own
// endpoints. Set the fields before first use; it is safe for concurrent
// use after that, and must not be copied.
type Transport struct {
	// Client, when set, makes every call as it is: it is the caller's to
	// guard (tests that reach a provider by other means). Nil: the
	// guarded clients.
	Client *http.Client
	// GitHub is where GitHub sign-in goes; zero: GitHub. Tests point it
	// at a server on loopback, which the guard then lets it reach.
	GitHub GitHubEndpoints
	// AllowPrivate lets provider calls reach every address: private,
	// loopback, link-local (--oauth-allow-private), for a provider on
	// the server's own network.
	AllowPrivate bool
	// Resolver resolves provider host names; nil: the system's (tests
	// set one).
	Resolver *net.Resolver

	once    sync.Once
	clients [3]*http.Client // by netguard.Reach
}

// ErrPrivateAddress is the guard's refusal (wrapped in the call's
// error): the provider's endpoint is at an address latchkey does not
// call. Test for it with errors.Is.
var ErrPrivateAddress = errors.New("social: the provider's endpoint is at a private, loopback or link-local address")

// defaultClients are the guarded clients of a nil *Transport.
var defaultClients = sync.OnceValue(func() [3]*http.Client { return newClients(nil) })

// newClients returns a guarded client for each reach.
func newClients(resolver *net.Resolver) [3]*http.Client {
	var cs [3]*http.Client
	for _, r := range []netguard.Reach{netguard.ReachPublic, netguard.ReachLoopback, netguard.ReachPrivate} {
		d := netguard.Dialer(Timeout, r, ErrPrivateAddress, resolver)
		cs[r] = &http.Client{Timeout: Timeout, Transport: &http.Transport{
			// Proxy settings are ignored, as for webhooks: the guard
			// judges the address it dials, which a proxy would hide.
			Proxy:                  nil,
			DialContext:            d.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           64,
			MaxIdleConnsPerHost:    8,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    Timeout,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}}
	}
	return cs
}

// client returns the client for a provider on loopback or not.
func (t *Transport) client(loopback bool) *http.Client {
	if t != nil && t.Client != nil {
		return t.Client
	}
	r := netguard.ReachPublic
	if loopback {
		r = netguard.ReachLoopback
	}
	if t == nil {
		return defaultClients()[r]
	}
	if t.AllowPrivate {
		r = netguard.ReachPrivate
	}
	t.once.Do(func() { t.clients = newClients(t.Resolver) })
	return t.clients[r]
}

// AllowsPrivate reports whether provider calls may reach every address
// (AllowPrivate; false for a nil *Transport).
func (t *Transport) AllowsPrivate() bool { return t != nil && t.AllowPrivate }

// Endpoints returns the GitHub endpoints in use.
func (t *Transport) Endpoints() GitHubEndpoints {
	if t == nil || t.GitHub == (GitHubEndpoints{}) {
		return GitHub
	}
	return t.GitHub
}

// GitHubLoopback reports whether every GitHub endpoint in use is on
// loopback (a test's stand-in), which lets GitHub calls reach loopback.
func (t *Transport) GitHubLoopback() bool {
	e := t.Endpoints()
	for _, raw := range []string{e.AuthURL, e.TokenURL, e.APIURL} {
		u, err := url.Parse(raw)
		if err != nil || !LoopbackHost(u.Hostname()) {
			return false
		}
	}
	return true
}

// LoopbackHost reports whether host (a URL's host name, without port)
// is localhost or a loopback IP address.
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Context returns ctx carrying the client for calls to a provider, for
// oauth2 and go-oidc (which keep it for the provider's later calls, its
// JWKS among them). loopback says that the provider is on loopback (its
// issuer's host is localhost or a loopback address): its calls may then
// reach loopback too; otherwise public addresses only. Private and
// link-local addresses are refused either way unless AllowPrivate.
func (t *Transport) Context(ctx context.Context, loopback bool) context.Context {
	return oidc.ClientContext(ctx, t.client(loopback))
}

// ErrRefused is a provider's answer other than success (a GitHub API
// status other than 200).
var ErrRefused = errors.New("social: the provider refused the call")

// Email is one of a GitHub user's addresses.
type Email struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// GitHubUser returns the id of the user tok belongs to and its
// addresses (GET /user, GET /user/emails). A status other than 200 is
// ErrRefused (wrapped); a failure to reach the API is returned as is.
func (t *Transport) GitHubUser(ctx context.Context, conf *oauth2.Config, tok *oauth2.Token) (int64, []Email, error) {
	hc := conf.Client(t.Context(ctx, t.GitHubLoopback()), tok)
	base := strings.TrimRight(t.Endpoints().APIURL, "/")
	get := func(path string, v any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/vnd.github+json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%w: GitHub %s: %s", ErrRefused, path, resp.Status)
		}
		return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
	}
	var user struct {
		ID int64 `json:"id"`
	}
	if err := get("/user", &user); err != nil {
		return 0, nil, err
	}
	if user.ID == 0 {
		return 0, nil, fmt.Errorf("%w: GitHub user without an id", ErrRefused)
	}
	var emails []Email
	if err := get("/user/emails", &emails); err != nil {
		return 0, nil, err
	}
	return user.ID, emails, nil
}
