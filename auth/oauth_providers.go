package auth

import (
	"context"
	"net/netip"
	"net/url"
	"strings"

	"latchkey/auth/social"
	"latchkey/internal/netguard"
	"latchkey/store"
)

// Provider types and their fixed issuers.
var (
	providerTypes = map[string]bool{"oidc": true, "github": true, "google": true, "apple": true, "microsoft": true}
	knownIssuers  = map[string]string{
		"google":    "https://accounts.google.com",
		"apple":     "https://appleid.apple.com",
		"microsoft": "https://login.microsoftonline.com/common/v2.0",
	}
	providerName = lazyRegexp(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	// microsoftIssuer is the issuer of an ID token from Microsoft's
	// multi-tenant endpoints: the user's own tenant.
	microsoftIssuer = lazyRegexp(`^https://login\.microsoftonline\.com/([0-9a-f-]{36})/v2\.0$`)
)

// ProviderInput is the body of POST /admin/projects/:id/providers.
type ProviderInput struct {
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Issuer       string   `json:"issuer"`
	Scopes       []string `json:"scopes"`
	// ResponseMode is ResponseModeQuery or ResponseModeFormPost; empty
	// means the type's default (form_post for Apple, else query).
	ResponseMode string `json:"responseMode"`
	// LinkByEmail says whether a first sign-in with the provider may sign
	// in the existing account of an address the provider vouches for;
	// nil means the type's default (DefaultLinkByEmail).
	LinkByEmail *bool `json:"linkByEmail"`
}

// ProviderPatch is the body of PATCH
// /admin/projects/:id/providers/:name: the settings to change (nil:
// unchanged).
type ProviderPatch struct {
	LinkByEmail *bool `json:"linkByEmail"`
}

// ProviderView is a provider as the admin API shows it: never its secret.
type ProviderView struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	ClientID     string   `json:"clientId"`
	Issuer       *string  `json:"issuer"`
	Scopes       []string `json:"scopes"`
	ResponseMode string   `json:"responseMode"`
	LinkByEmail  bool     `json:"linkByEmail"`
	CreatedAt    string   `json:"createdAt"`
}

// How a provider returns the browser to the callback (the OAuth 2.0
// response_mode): a redirect carrying code and state in its query, or
// an HTML form the browser posts to the callback (Apple's way whenever
// it is asked for the address or the name).
const (
	ResponseModeQuery    = "query"
	ResponseModeFormPost = "form_post"
)

// responseMode is pr's response mode: the stored one, else the type's
// default.
func responseMode(pr *store.Provider) string {
	if pr.ResponseMode != "" {
		return pr.ResponseMode
	}
	if pr.Type == "apple" {
		return ResponseModeFormPost
	}
	return ResponseModeQuery
}

// DefaultLinkByEmail is the linkByEmail of a provider added without
// one: true for the providers whose verified addresses are their own to
// vouch for (google, apple, github, microsoft), false for a generic
// OpenID Connect provider (type oidc), whose users may be able to set
// any address on their account there.
func DefaultLinkByEmail(typ string) bool { return typ != "oidc" }

// linkByEmail reports whether a first sign-in with pr may sign in the
// existing account of the address pr vouches for. A provider stored
// before the setting existed (nil) keeps doing what it did then: it
// links.
func linkByEmail(pr *store.Provider) bool {
	if pr.LinkByEmail != nil {
		return *pr.LinkByEmail
	}
	return true
}

// ViewProvider returns the admin view of pr.
func ViewProvider(pr *store.Provider) ProviderView {
	scopes := pr.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return ProviderView{ID: pr.ID, Name: pr.Name, Type: pr.Type, ClientID: pr.ClientID,
		Issuer: nullable(pr.Issuer), Scopes: scopes, ResponseMode: responseMode(pr), LinkByEmail: linkByEmail(pr),
		CreatedAt: formatTime(pr.CreatedAt)}
}

// defaultScopes are the scopes asked when a provider names none.
func defaultScopes(typ string) []string {
	switch typ {
	case "github":
		return []string{"read:user", "user:email"}
	case "apple":
		return []string{"openid", "email", "name"}
	}
	return []string{"openid", "email", "profile"}
}

// checkIssuer validates an issuer URL: https, or http on a loopback
// address (a provider on the same host). An issuer whose host is a
// private, link-local or reserved IP address is refused unless
// allowPrivate (a name is judged when it is dialled: social).
func checkIssuer(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || len(raw) > 512 {
		return Invalid("issuer must be an absolute https URL.")
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !social.LoopbackHost(u.Hostname())) {
		return Invalid("issuer must be an absolute https URL.")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && netguard.IsPrivate(ip) && !ip.Unmap().IsLoopback() {
		return Invalid("issuer must not be a private, link-local or reserved address: latchkey does not call those (--oauth-allow-private lifts this).")
	}
	return nil
}

// AddProvider registers an OAuth provider for project projectID; the
// client secret is sealed with the keyring and never shown again. Its
// linkByEmail is in.LinkByEmail, else DefaultLinkByEmail of its type.
// 400 VALIDATION_ERROR for a bad field, 404 PROJECT_NOT_FOUND, 409
// PROVIDER_EXISTS when the project has a provider of that name.
func (s *Service) AddProvider(ctx context.Context, projectID string, in ProviderInput) (ProviderView, error) {
	if !providerTypes[in.Type] {
		return ProviderView{}, Invalid(`type must be "oidc", "github", "google", "apple" or "microsoft".`)
	}
	if in.Name == "" {
		in.Name = in.Type
	}
	if !providerName().MatchString(in.Name) {
		return ProviderView{}, Invalid("name must match [a-z0-9][a-z0-9_-]{0,63}.")
	}
	if in.ClientID == "" || len(in.ClientID) > 512 {
		return ProviderView{}, Invalid("clientId must be 1 to 512 characters.")
	}
	if in.ClientSecret == "" || len(in.ClientSecret) > 4096 {
		return ProviderView{}, Invalid("clientSecret must be 1 to 4096 characters.")
	}
	switch {
	case in.Type == "oidc" && in.Issuer == "":
		return ProviderView{}, Invalid("issuer is required for type oidc.")
	case in.Type == "github" && in.Issuer != "":
		return ProviderView{}, Invalid("issuer is not used for type github.")
	case in.Type == "microsoft" && in.Issuer != "":
		// A single-tenant application names its tenant's issuer.
		if !microsoftIssuer().MatchString(in.Issuer) && in.Issuer != knownIssuers["microsoft"] {
			return ProviderView{}, Invalid("issuer must be https://login.microsoftonline.com/<tenant id>/v2.0.")
		}
	case in.Type == "google" || in.Type == "apple":
		if in.Issuer != "" && in.Issuer != knownIssuers[in.Type] {
			return ProviderView{}, Invalid("issuer of %s is %s.", in.Type, knownIssuers[in.Type])
		}
	}
	if in.Issuer == "" {
		in.Issuer = knownIssuers[in.Type]
	}
	if in.Issuer != "" {
		if err := checkIssuer(in.Issuer, s.social.AllowsPrivate()); err != nil {
			return ProviderView{}, err
		}
	}
	if len(in.Scopes) > 20 {
		return ProviderView{}, Invalid("scopes holds at most 20 scopes.")
	}
	for _, sc := range in.Scopes {
		if sc == "" || len(sc) > 128 || strings.ContainsAny(sc, " \t\r\n") {
			return ProviderView{}, Invalid("each scope must be 1 to 128 characters without spaces.")
		}
	}
	if len(in.Scopes) == 0 {
		in.Scopes = defaultScopes(in.Type)
	}
	if in.Type != "github" && !contains(in.Scopes, "openid") {
		in.Scopes = append([]string{"openid"}, in.Scopes...)
	}
	switch in.ResponseMode {
	case "":
		in.ResponseMode = responseMode(&store.Provider{Type: in.Type})
	case ResponseModeQuery, ResponseModeFormPost:
	default:
		return ProviderView{}, Invalid(`responseMode must be "query" or "form_post".`)
	}
	switch {
	case in.Type == "github" && in.ResponseMode == ResponseModeFormPost:
		return ProviderView{}, Invalid("responseMode form_post is not available for type github: GitHub returns with a redirect.")
	case in.Type == "apple" && in.ResponseMode == ResponseModeQuery && (contains(in.Scopes, "email") || contains(in.Scopes, "name")):
		return ProviderView{}, Invalid("Apple returns with form_post when asked for email or name: responseMode query needs scopes without them.")
	}
	link := DefaultLinkByEmail(in.Type)
	if in.LinkByEmail != nil {
		link = *in.LinkByEmail
	}
	pr := store.Provider{ID: newID(), Name: in.Name, Type: in.Type, ClientID: in.ClientID,
		Issuer: in.Issuer, Scopes: in.Scopes, ResponseMode: in.ResponseMode, LinkByEmail: &link, CreatedAt: s.now().UTC()}
	sealed, err := s.keys.Seal([]byte(in.ClientSecret), []byte("provider:"+pr.ID))
	if err != nil {
		return ProviderView{}, internal(err)
	}
	pr.Secret = sealed
	err = s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		if findProvider(p, pr.Name) != nil {
			return ErrProviderExists
		}
		p.Providers = append(p.Providers, pr)
		return tx.PutProject(p)
	})
	if err != nil {
		return ProviderView{}, internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	return ViewProvider(&pr), nil
}

// UpdateProvider changes the settings of project projectID's provider
// name that patch sets (linkByEmail) and returns its view; sign-ins
// already past the provider's callback keep the setting they were
// proven under. 400 VALIDATION_ERROR when patch sets nothing, 404
// PROJECT_NOT_FOUND or PROVIDER_NOT_FOUND.
func (s *Service) UpdateProvider(ctx context.Context, projectID, name string, patch ProviderPatch) (ProviderView, error) {
	if patch.LinkByEmail == nil {
		return ProviderView{}, Invalid("Nothing to change: give linkByEmail.")
	}
	var v ProviderView
	err := s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		pr := findProvider(p, name)
		if pr == nil {
			return ErrProviderNotFound
		}
		pr.LinkByEmail = boolPtr(*patch.LinkByEmail)
		v = ViewProvider(pr)
		return tx.PutProject(p)
	})
	if err != nil {
		return ProviderView{}, internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	return v, nil
}

// Providers lists project projectID's providers, oldest first; 404
// PROJECT_NOT_FOUND for an unknown project.
func (s *Service) Providers(ctx context.Context, projectID string) ([]ProviderView, error) {
	out := []ProviderView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		for i := range p.Providers {
			out = append(out, ViewProvider(&p.Providers[i]))
		}
		return nil
	})
	return out, internal(err)
}

// DeleteProvider removes project projectID's provider name; sign-ins
// already started with it fail at the callback. 404 PROJECT_NOT_FOUND or
// PROVIDER_NOT_FOUND.
func (s *Service) DeleteProvider(ctx context.Context, projectID, name string) error {
	var removed string // its id
	err := s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		for i := range p.Providers {
			if p.Providers[i].Name == name {
				removed = p.Providers[i].ID
				p.Providers = append(p.Providers[:i:i], p.Providers[i+1:]...)
				if len(p.Providers) == 0 {
					p.Providers = nil
				}
				return tx.PutProject(p)
			}
		}
		return ErrProviderNotFound
	})
	if err != nil {
		return internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	s.oidc.forget(projectID, removed)
	return nil
}

func findProvider(p *store.Project, name string) *store.Provider {
	for i := range p.Providers {
		if p.Providers[i].Name == name {
			return &p.Providers[i]
		}
	}
	return nil
}
