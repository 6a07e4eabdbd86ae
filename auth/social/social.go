// Package social is the HTTP side of OAuth 2.0 / OpenID Connect sign-in
// (decisions.md §18): the client latchkey calls providers with, and
// GitHub's REST API, which has no ID token. Package auth holds the use
// cases and imports this package, as it imports totp; it makes no HTTP
// call of its own.
package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
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

// Transport makes the calls to providers. The zero value uses a client
// with Timeout and GitHub's own endpoints. It is safe for concurrent use.
type Transport struct {
	Client *http.Client    // nil: a client with Timeout
	GitHub GitHubEndpoints // zero: GitHub
}

func (t *Transport) client() *http.Client {
	if t == nil || t.Client == nil {
		return defaultClient
	}
	return t.Client
}

var defaultClient = &http.Client{Timeout: Timeout}

// Endpoints returns the GitHub endpoints in use.
func (t *Transport) Endpoints() GitHubEndpoints {
	if t == nil || t.GitHub == (GitHubEndpoints{}) {
		return GitHub
	}
	return t.GitHub
}

// Context returns ctx carrying the client, for oauth2 and go-oidc calls.
func (t *Transport) Context(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, t.client())
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
	hc := conf.Client(t.Context(ctx), tok)
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
