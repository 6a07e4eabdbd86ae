package auth

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// A provider's clients as op sees them, and the minter of its codes and
// access tokens (op.Crypto).

// oidcClient is a client as op sees it (op.Client).
type oidcClient struct {
	c      *store.OIDCClient
	issuer string
	// sc is the notes of the request that asked for the client
	// (LoginURL).
	sc *oidcScratch
}

var _ op.Client = (*oidcClient)(nil)

func (c *oidcClient) GetID() string                    { return c.c.ID }
func (c *oidcClient) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *oidcClient) PostLogoutRedirectURIs() []string { return c.c.PostLogoutRedirectURIs }

// ApplicationType: a public client is native, so that a loopback
// redirect URI matches on any port (RFC 8252); a confidential one is a
// web app, matched exactly.
func (c *oidcClient) ApplicationType() op.ApplicationType {
	if c.c.Type == ClientPublic {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

// AuthMethod: none for a public client, the secret for a confidential
// one (op takes it by Basic or in the form).
func (c *oidcClient) AuthMethod() oidc.AuthMethod {
	if c.c.Type == ClientPublic {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

// ResponseTypes: the code flow only.
func (c *oidcClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *oidcClient) GrantTypes() []oidc.GrantType {
	out := make([]oidc.GrantType, 0, len(c.c.GrantTypes))
	for _, g := range c.c.GrantTypes {
		out = append(out, oidc.GrantType(g))
	}
	return out
}

// LoginURL is where op sends the browser once request id is stored:
// the hosted sign-in page, or, when the browser's session answered the
// request as it was stored (createAnswered), the client's redirect URI
// with the code.
func (c *oidcClient) LoginURL(id string) string {
	if c.sc != nil && c.sc.answered != nil && c.sc.answered.id == id {
		return c.sc.answered.location
	}
	return c.issuer + OIDCLoginPath + "?authRequestID=" + id
}

// AccessTokenType is Bearer: op then hands the token id, which is the
// access token CreateAccessToken signed, to the minter (OIDCMinter),
// which returns it as is.
func (c *oidcClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c *oidcClient) IDTokenLifetime() time.Duration      { return time.Hour }
func (c *oidcClient) DevMode() bool                       { return false }
func (c *oidcClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *oidcClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed admits the client's scopes beyond op's own.
func (c *oidcClient) IsScopeAllowed(scope string) bool { return slices.Contains(c.c.Scopes, scope) }

// IDTokenUserinfoClaimsAssertion is true: the ID token carries the
// email and profile claims even though an access token is issued.
func (c *oidcClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *oidcClient) ClockSkew() time.Duration             { return 0 }

// OIDCMinter is the providers' op.Crypto. op "encrypts" two things: an
// authorization request's id, for its code, and "<token id>:<subject>"
// for a Bearer access token. A code is the request's id and 256 random
// bits (SaveAuthCode keeps its keyed hash); an access token's id is the
// token CreateAccessToken signed, returned as is. Decrypt always fails,
// so op verifies presented access tokens as JWTs against the project's
// keys.
type OIDCMinter struct{}

// Encrypt returns the code of a request id, or the access token of a
// "<token>:<subject>".
func (OIDCMinter) Encrypt(s string) (string, error) {
	if tok, _, ok := strings.Cut(s, ":"); ok {
		if strings.Count(tok, ".") != 2 {
			return "", errors.New("oidc: not an access token")
		}
		return tok, nil
	}
	if s == "" || strings.Contains(s, ".") {
		return "", errors.New("oidc: not an authorization request id")
	}
	return s + "." + randomString(base62, 43), nil
}

// Decrypt always fails: no token is an encryption.
func (OIDCMinter) Decrypt(string) (string, error) { return "", errors.New("oidc: not an opaque token") }
