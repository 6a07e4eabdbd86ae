package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"latchkey/store"
)

// Dynamic client registration (RFC 7591) with the projects' OpenID
// providers (docs/oidc.md, "Dynamic client registration"): off unless a
// project's clientRegistration is "open", for agents and MCP clients
// that register themselves. A registered client is public (no secret:
// it uses PKCE), third-party (the user consents to each) and its
// redirect URIs are checked as the admin API checks a public client's.
// A project takes at most MaxRegistrationsPerHour registrations per
// rolling hour, counted from its clients' rows (so on every replica
// alike). There is no registration access token: a registered client
// cannot read, change or delete itself (RFC 7592); the admin API can.

// The values of a project's clientRegistration.
const (
	ClientRegistrationOpen   = "open"
	ClientRegistrationClosed = "closed"
)

// MaxRegistrationsPerHour is how many clients may register themselves
// with one project within any hour.
const MaxRegistrationsPerHour = 100

// registrationWindow is the window MaxRegistrationsPerHour counts in.
const registrationWindow = time.Hour

// defaultRegisteredName names a registered client that gave no
// client_name.
const defaultRegisteredName = "Unnamed app"

// The error codes of a refused registration (RFC 7591, section 3.2.2),
// and those latchkey adds: registration closed, too many
// registrations.
const (
	RegInvalidRedirectURI    = "invalid_redirect_uri"
	RegInvalidClientMetadata = "invalid_client_metadata"
	RegClosed                = "access_denied"
	RegTooMany               = "temporarily_unavailable"
)

// RegistrationError is a refused registration, answered as RFC 7591's
// {error, error_description}. RetryAfter is set for RegTooMany: when
// the oldest registration of the window leaves it.
type RegistrationError struct {
	Code        string
	Description string
	RetryAfter  time.Duration
}

// Error returns the code and the description.
func (e *RegistrationError) Error() string { return e.Code + ": " + e.Description }

// regError returns a RegistrationError of code.
func regError(code, format string, args ...any) *RegistrationError {
	return &RegistrationError{Code: code, Description: Invalid(format, args...).Message}
}

// asRegError turns a validation error of the admin API's checks into a
// RegistrationError of code, its field named as in RFC 7591 (field,
// the admin API's name, becomes rfcField).
func asRegError(code string, err error, field, rfcField string) *RegistrationError {
	msg := "Invalid client metadata."
	var e *Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	if field != "" {
		msg = strings.Replace(msg, field, rfcField, 1)
	}
	return &RegistrationError{Code: code, Description: msg}
}

// Registration is a client's registration request: the RFC 7591
// metadata latchkey reads. Other metadata is ignored, as RFC 7591 says.
type Registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	PostLogoutRedirectURIs  []string `json:"post_logout_redirect_uris"`
	ClientName              *string  `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// RegisteredClient is the answer to a registration (RFC 7591, section
// 3.2.1): the client's id and the metadata as registered. It has no
// secret (the client is public) and no registration access token.
type RegisteredClient struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	PostLogoutRedirectURIs  []string `json:"post_logout_redirect_uris,omitempty"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

// registrationGrants are the grant types a registered client may have.
var registrationGrants = []string{GrantAuthorizationCode, GrantRefreshToken, GrantDeviceCode}

// RegisterClient registers a client with projectID's provider (RFC
// 7591). It answers ErrProjectNotFound for an unknown project, a
// *RegistrationError for a closed project (RegClosed), refused metadata
// (RegInvalidRedirectURI, RegInvalidClientMetadata) or the hour's
// registrations spent (RegTooMany), and creates nothing then.
func (s *Service) RegisterClient(ctx context.Context, projectID string, in Registration) (*RegisteredClient, error) {
	c, err := in.client()
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	c.ID, c.ProjectID, c.CreatedAt, c.UpdatedAt = newID(), projectID, now, now
	err = s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		if p.ClientRegistration != ClientRegistrationOpen {
			return regError(RegClosed, "Client registration is closed for this project.")
		}
		existing, err := tx.OIDCClients(projectID)
		if err != nil {
			return err
		}
		if len(existing) >= MaxClientsPerProject {
			return &RegistrationError{Code: RegTooMany, RetryAfter: registrationWindow,
				Description: "This project has as many clients as it may have."}
		}
		var recent []time.Time
		for _, e := range existing {
			if e.Registered && now.Sub(e.CreatedAt) < registrationWindow {
				recent = append(recent, e.CreatedAt)
			}
		}
		if len(recent) >= MaxRegistrationsPerHour {
			oldest := slices.MinFunc(recent, func(a, b time.Time) int { return a.Compare(b) })
			return &RegistrationError{Code: RegTooMany, RetryAfter: max(oldest.Add(registrationWindow).Sub(now), time.Second),
				Description: "Too many clients registered with this project in the last hour; retry later."}
		}
		return tx.PutOIDCClient(c)
	})
	var re *RegistrationError
	if errors.As(err, &re) {
		return nil, re
	} else if err != nil {
		return nil, internal(err)
	}
	out := &RegisteredClient{ClientID: c.ID, ClientIDIssuedAt: now.Unix(), ClientName: c.Name,
		RedirectURIs: orEmpty(c.RedirectURIs), PostLogoutRedirectURIs: c.PostLogoutRedirectURIs, GrantTypes: c.GrantTypes,
		ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none", Scope: strings.Join(c.Scopes, " ")}
	return out, nil
}

// client checks a registration's metadata and returns the client it
// makes (without its id, project and times): public, third-party, with
// the admin API's checks of a public client's fields.
func (in *Registration) client() (*store.OIDCClient, error) {
	if m := in.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, regError(RegInvalidClientMetadata, `token_endpoint_auth_method must be "none": registered clients are public and use PKCE.`)
	}
	for _, rt := range in.ResponseTypes {
		if rt != "code" {
			return nil, regError(RegInvalidClientMetadata, `response_types: only "code" is supported.`)
		}
	}
	grants := []string{GrantAuthorizationCode}
	if in.GrantTypes != nil {
		for _, g := range in.GrantTypes {
			if !slices.Contains(registrationGrants, g) {
				return nil, regError(RegInvalidClientMetadata, "grant_types: %q cannot be registered (authorization_code, refresh_token or %s).", clip(g), GrantDeviceCode)
			}
		}
		var err error
		if grants, err = grantTypes(in.GrantTypes); err != nil {
			return nil, asRegError(RegInvalidClientMetadata, err, "grantTypes", "grant_types")
		}
	}
	c := &store.OIDCClient{Name: defaultRegisteredName, Type: ClientPublic, GrantTypes: grants,
		Scopes: slices.Clone(ProviderScopes), IDTokenAlg: AlgRS256, AccessTokenLifetimeSeconds: DefaultAccessTokenLifetime,
		RefreshTokenLifetimeSeconds: DefaultRefreshLifetime, RefreshTokenIdleSeconds: DefaultRefreshIdle, Registered: true}
	if in.ClientName != nil {
		n, ok := clientName(*in.ClientName)
		if !ok {
			return nil, regError(RegInvalidClientMetadata, "client_name must be 1 to 100 characters.")
		}
		c.Name = n
	}
	if in.Scope != "" {
		scopes := strings.Fields(in.Scope)
		if !slices.Contains(scopes, "openid") {
			scopes = append([]string{"openid"}, scopes...)
		}
		sc, err := clientScopes(scopes)
		if err != nil {
			return nil, asRegError(RegInvalidClientMetadata, err, "scopes", "scope")
		}
		c.Scopes = sc
	}
	uris, err := clientURIs("redirect_uris", in.RedirectURIs, true)
	if err != nil {
		return nil, asRegError(RegInvalidRedirectURI, err, "", "")
	}
	c.RedirectURIs = uris
	if len(uris) == 0 && slices.Contains(grants, GrantAuthorizationCode) {
		return nil, regError(RegInvalidRedirectURI, "redirect_uris: give at least one redirect URI (the authorization_code grant needs one).")
	}
	if in.PostLogoutRedirectURIs != nil {
		if c.PostLogoutRedirectURIs, err = clientURIs("post_logout_redirect_uris", in.PostLogoutRedirectURIs, true); err != nil {
			return nil, asRegError(RegInvalidClientMetadata, err, "", "")
		}
	}
	if err := checkClient(c); err != nil {
		return nil, asRegError(RegInvalidClientMetadata, err, "", "")
	}
	return c, nil
}
