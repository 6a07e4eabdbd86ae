package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
)

// Clients of a project's OpenID provider (docs/api.md, OpenID Connect
// clients).

type oidcClient struct {
	ID                          string            `json:"id"`
	ProjectID                   string            `json:"projectId"`
	Name                        string            `json:"name"`
	Type                        string            `json:"type"`
	Issuer                      string            `json:"issuer"`
	RedirectURIs                []string          `json:"redirectUris"`
	PostLogoutRedirectURIs      []string          `json:"postLogoutRedirectUris"`
	BackchannelLogoutURI        *string           `json:"backchannelLogoutUri"`
	GrantTypes                  []string          `json:"grantTypes"`
	Scopes                      []string          `json:"scopes"`
	FirstParty                  bool              `json:"firstParty"`
	RequireMFA                  bool              `json:"requireMfa"`
	IDTokenAlg                  string            `json:"idTokenAlg"`
	AccessTokenLifetimeSeconds  int               `json:"accessTokenLifetimeSeconds"`
	RefreshTokenLifetimeSeconds int               `json:"refreshTokenLifetimeSeconds"`
	RefreshTokenIdleSeconds     int               `json:"refreshTokenIdleSeconds"`
	Claims                      map[string]string `json:"claims"`
	CreatedAt                   string            `json:"createdAt"`
	UpdatedAt                   string            `json:"updatedAt"`
}

// clientPath is the admin API path of a project's clients, and of one
// when id is given.
func clientPath(projectID string, id ...string) string {
	p := "/api/v1/admin/projects/" + pathID(projectID) + "/clients"
	for _, s := range id {
		p += "/" + pathID(s)
	}
	return p
}

var clientCreate = &command{
	name:    "client create",
	summary: "register an OpenID Connect client (secret printed once)",
	help: "Register a client (relying party) of a project's OpenID provider: an app that signs its users in\n" +
		"with latchkey over OpenID Connect. A confidential client's secret is printed once: give it to the app.\n" +
		"Give the app the issuer printed below; it finds the rest by discovery.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		typ := fs.String("type", "", "`TYPE`: confidential (a server-side app, with a secret) or public (a browser or native app) (required)")
		body := clientFlags(fs)
		return func(ctx context.Context, c *call) error {
			for _, f := range []string{"project", "name", "type"} {
				if !c.set[f] {
					return usagef("--%s is required", f)
				}
			}
			b, err := body(c)
			if err != nil {
				return err
			}
			b["type"] = *typ
			var resp struct {
				Client       oidcClient `json:"client"`
				ClientSecret *string    `json:"clientSecret"`
			}
			return c.send(ctx, "POST", clientPath(*projectID), nil, b, &resp, func() error {
				if resp.ClientSecret != nil {
					fmt.Fprintf(c.out, "Client secret (shown once; it cannot be retrieved later):\n\n    %s\n\n", *resp.ClientSecret)
				}
				return printClient(c, resp.Client)
			})
		}
	},
}

var clientList = &command{
	name:    "client list",
	summary: "list a project's OpenID Connect clients (never the secrets)",
	help:    "List the clients of a project's OpenID provider, oldest first.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Clients []oidcClient `json:"clients"`
			}
			return c.send(ctx, "GET", clientPath(*projectID), nil, nil, &resp, func() error {
				if len(resp.Clients) == 0 {
					_, err := fmt.Fprintln(c.out, "No clients.")
					return err
				}
				t := newTable(c.out, "ID", "NAME", "TYPE", "GRANTS", "REDIRECT URIS", "CREATED")
				for _, cl := range resp.Clients {
					t.row(cl.ID, cl.Name, cl.Type, list(cl.GrantTypes), list(cl.RedirectURIs), humanTime(cl.CreatedAt))
				}
				return t.flush()
			})
		}
	},
}

var clientGet = &command{
	name:    "client get",
	args:    []string{"ID"},
	summary: "show an OpenID Connect client",
	help:    "Show the client ID of a project's OpenID provider (never its secret).",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Client oidcClient `json:"client"`
			}
			return c.send(ctx, "GET", clientPath(*projectID, c.args[0]), nil, nil, &resp, func() error {
				return printClient(c, resp.Client)
			})
		}
	},
}

var clientUpdate = &command{
	name:    "client update",
	args:    []string{"ID"},
	summary: "change an OpenID Connect client",
	help: "Change the client ID: only the flags given are sent. A repeatable flag replaces the whole list\n" +
		"(--post-logout-uri \"\" empties it; --claim \"\" removes every claim); --backchannel-logout-uri \"\"\n" +
		"removes it. A client's type cannot change.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		body := clientFlags(fs)
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			b, err := body(c)
			if err != nil {
				return err
			}
			if len(b) == 0 {
				return usagef("nothing to update: give at least one of the client's flags (--name, --redirect-uri...)")
			}
			var resp struct {
				Client oidcClient `json:"client"`
			}
			return c.send(ctx, "PATCH", clientPath(*projectID, c.args[0]), nil, b, &resp, func() error {
				return printClient(c, resp.Client)
			})
		}
	},
}

var clientDelete = &command{
	name:    "client delete",
	args:    []string{"ID"},
	summary: "delete an OpenID Connect client",
	help:    "Delete the client ID: the provider no longer knows it. There is no undo.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			return c.send(ctx, "DELETE", clientPath(*projectID, c.args[0]), nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Deleted client %s.\n", cell(c.args[0]))
				return err
			})
		}
	},
}

var clientRotateSecret = &command{
	name:    "client rotate-secret",
	args:    []string{"ID"},
	summary: "give a confidential client a new secret (printed once)",
	help: "Give the confidential client ID a new secret, printed once. The old secret stops working at once:\n" +
		"update the app right after.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				ClientSecret string `json:"clientSecret"`
			}
			return c.send(ctx, "POST", clientPath(*projectID, c.args[0])+"/secret", nil, nil, &resp, func() error {
				_, err := fmt.Fprintf(c.out, "New client secret (shown once; it cannot be retrieved later):\n\n    %s\n", resp.ClientSecret)
				return err
			})
		}
	},
}

// uriFlag is a repeatable flag of URIs, one per value (URIs may hold
// commas); `""` sets an empty list.
type uriFlag []string

func (l *uriFlag) String() string { return strings.Join(*l, " ") }

func (l *uriFlag) Set(v string) error {
	if *l == nil {
		*l = []string{}
	}
	if v = strings.TrimSpace(v); v != "" {
		*l = append(*l, v)
	}
	return nil
}

// clientFlags declares the client fields create and update share as
// flags and returns a function that builds the request body from those
// that were set.
func clientFlags(fs *flag.FlagSet) func(c *call) (map[string]any, error) {
	name := fs.String("name", "", "client `NAME` shown to users (1 to 100 characters)")
	var redirects, postLogout uriFlag
	fs.Var(&redirects, "redirect-uri", "redirect `URI`: https, http on 127.0.0.1 or [::1], or (public clients) a custom scheme; repeat for several")
	fs.Var(&postLogout, "post-logout-uri", "`URI` the browser may return to after signing out; repeat for several")
	backchannel := fs.String("backchannel-logout-uri", "", "`URI` the provider posts back-channel logout tokens to")
	var grants, scopes, claims listFlag
	fs.Var(&grants, "grant-type", "`GRANT`: authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:device_code, client_credentials; repeat or separate with commas (server default authorization_code)")
	fs.Var(&scopes, "scope", "`SCOPE` the client may ask for, openid among them; repeat or separate with commas (server default: openid profile email groups offline_access)")
	fs.Var(&claims, "claim", "`NAME=metadata.KEY`: a claim of the client's tokens from the user's metadata; repeat or separate with commas")
	firstParty := fs.String("first-party", "", "`YES_OR_NO`: a first-party client gets no consent page (server default no)")
	requireMFA := fs.String("require-mfa", "", "`YES_OR_NO`: its sign-ins need a second factor (server default no)")
	alg := fs.String("id-token-alg", "", "ID token `ALG`: RS256 or ES256 (server default RS256)")
	atTTL := fs.Int("access-token-ttl", 0, "access token lifetime in `SECONDS` (300 to 86400; server default 3600)")
	rtTTL := fs.Int("refresh-token-ttl", 0, "refresh token lifetime in `SECONDS` (server default 2592000, 30 days)")
	rtIdle := fs.Int("refresh-token-idle", 0, "refresh token idle time in `SECONDS` (server default 604800, 7 days)")
	return func(c *call) (map[string]any, error) {
		b := map[string]any{}
		for flagName, v := range map[string]any{
			"name": name, "redirect-uri": &redirects, "post-logout-uri": &postLogout, "backchannel-logout-uri": backchannel,
			"grant-type": &grants, "scope": &scopes, "id-token-alg": alg,
			"access-token-ttl": atTTL, "refresh-token-ttl": rtTTL, "refresh-token-idle": rtIdle,
		} {
			if !c.set[flagName] {
				continue
			}
			switch v := v.(type) {
			case *string:
				b[clientField[flagName]] = *v
			case *int:
				b[clientField[flagName]] = *v
			case *uriFlag:
				b[clientField[flagName]] = []string(*v)
			case *listFlag:
				b[clientField[flagName]] = []string(*v)
			}
		}
		for flagName, v := range map[string]*string{"first-party": firstParty, "require-mfa": requireMFA} {
			if c.set[flagName] {
				yes, err := yesNo(flagName, *v)
				if err != nil {
					return nil, err
				}
				b[clientField[flagName]] = yes
			}
		}
		if c.set["claim"] {
			m := map[string]string{}
			for _, kv := range claims {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return nil, usagef("--claim must be NAME=metadata.KEY, got %q", kv)
				}
				m[k] = v
			}
			b["claims"] = m
		}
		return b, nil
	}
}

// clientField is the wire field of each client flag.
var clientField = map[string]string{
	"name": "name", "redirect-uri": "redirectUris", "post-logout-uri": "postLogoutRedirectUris",
	"backchannel-logout-uri": "backchannelLogoutUri", "grant-type": "grantTypes", "scope": "scopes",
	"first-party": "firstParty", "require-mfa": "requireMfa", "id-token-alg": "idTokenAlg",
	"access-token-ttl": "accessTokenLifetimeSeconds", "refresh-token-ttl": "refreshTokenLifetimeSeconds",
	"refresh-token-idle": "refreshTokenIdleSeconds",
}

func printClient(c *call, cl oidcClient) error {
	yes := map[bool]string{true: "yes", false: "no"}
	var claims []string
	for k, v := range cl.Claims {
		claims = append(claims, k+"="+v)
	}
	sort.Strings(claims)
	backchannel := deref(cl.BackchannelLogoutURI)
	if backchannel == "" {
		backchannel = "-"
	}
	return details(c.out,
		"ID", cl.ID,
		"Name", cl.Name,
		"Type", cl.Type,
		"Issuer", cl.Issuer,
		"Redirect URIs", strings.Join(orDash(cl.RedirectURIs), " "),
		"Post-logout URIs", strings.Join(orDash(cl.PostLogoutRedirectURIs), " "),
		"Back-channel logout", backchannel,
		"Grant types", list(cl.GrantTypes),
		"Scopes", strings.Join(orDash(cl.Scopes), " "),
		"First party", yes[cl.FirstParty],
		"Requires MFA", yes[cl.RequireMFA],
		"ID token alg", cl.IDTokenAlg,
		"Access token TTL", humanSeconds(cl.AccessTokenLifetimeSeconds),
		"Refresh token TTL", fmt.Sprintf("%s (idle %s)", humanSeconds(cl.RefreshTokenLifetimeSeconds), humanSeconds(cl.RefreshTokenIdleSeconds)),
		"Claims", strings.Join(orDash(claims), " "),
		"Created", humanTime(cl.CreatedAt),
		"Updated", humanTime(cl.UpdatedAt),
	)
}

// orDash returns items, or "-" alone for none.
func orDash(items []string) []string {
	if len(items) == 0 {
		return []string{"-"}
	}
	return items
}
