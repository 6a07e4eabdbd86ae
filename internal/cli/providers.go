package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// OAuth / OpenID Connect providers of a project (docs/api.md, OAuth
// providers of a project).

type provider struct {
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

var providerAdd = &command{
	name:    "provider add",
	summary: "add an OAuth / OpenID Connect sign-in provider to a project",
	help: "Add a sign-in provider (google, github, microsoft, apple or any oidc issuer) to a project.\n" +
		"The client secret is read from --client-secret-file (\"-\": standard input), so that it stays out\n" +
		"of the process list and the shell history; it is stored encrypted and never shown again.\n" +
		"Register <base URL>/api/v1/oauth/callback as the redirect URI at the provider.\n" +
		"--link-by-email says whether a first sign-in may sign in the existing account of an address\n" +
		"the provider says is verified (default: yes, but no for oidc; see provider set).",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		typ := fs.String("type", "", "`TYPE`: oidc, github, google, apple or microsoft (required)")
		name := fs.String("name", "", "`NAME` in the project (default: the type)")
		clientID := fs.String("client-id", "", "the OAuth client `ID` (required)")
		secretFile := fs.String("client-secret-file", "", "`FILE` holding the client secret, - for standard input (required)")
		issuer := fs.String("issuer", "", "issuer `URL` (required for oidc; a tenant's issuer for microsoft)")
		scopes := fs.String("scopes", "", "space- or comma-separated `SCOPES` (default: openid email profile; github: read:user user:email)")
		responseMode := fs.String("response-mode", "", "how the provider returns to the callback, `MODE`: query or form_post (default: form_post for apple, query otherwise)")
		link := fs.String("link-by-email", "", "`YES_OR_NO`: link a first sign-in to the existing account of a verified address (default: yes; no for oidc)")
		return func(ctx context.Context, c *call) error {
			for _, f := range []string{"project", "type", "client-id", "client-secret-file"} {
				if !c.set[f] {
					return usagef("--%s is required", f)
				}
			}
			var raw []byte
			var err error
			if *secretFile == "-" {
				raw, err = io.ReadAll(io.LimitReader(os.Stdin, 8192))
			} else {
				raw, err = os.ReadFile(*secretFile)
			}
			if err != nil {
				return fmt.Errorf("reading the client secret: %w", err)
			}
			body := map[string]any{"type": *typ, "clientId": *clientID, "clientSecret": strings.TrimSpace(string(raw))}
			if *name != "" {
				body["name"] = *name
			}
			if *issuer != "" {
				body["issuer"] = *issuer
			}
			if *scopes != "" {
				body["scopes"] = strings.FieldsFunc(*scopes, func(r rune) bool { return r == ' ' || r == ',' })
			}
			if *responseMode != "" {
				body["responseMode"] = *responseMode
			}
			if c.set["link-by-email"] {
				v, err := yesNo("link-by-email", *link)
				if err != nil {
					return err
				}
				body["linkByEmail"] = v
			}
			var resp struct {
				Provider provider `json:"provider"`
			}
			return c.send(ctx, "POST", "/api/v1/admin/projects/"+pathID(*projectID)+"/providers", nil, body, &resp, func() error {
				return printProviders(c, resp.Provider)
			})
		}
	},
}

var providerList = &command{
	name:    "provider list",
	summary: "list a project's sign-in providers (never the secrets)",
	help:    "List the OAuth / OpenID Connect providers of a project, oldest first.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Providers []provider `json:"providers"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/projects/"+pathID(*projectID)+"/providers", nil, nil, &resp, func() error {
				if len(resp.Providers) == 0 {
					_, err := fmt.Fprintln(c.out, "No providers.")
					return err
				}
				return printProviders(c, resp.Providers...)
			})
		}
	},
}

var providerSet = &command{
	name:    "provider set",
	args:    []string{"NAME"},
	summary: "change a sign-in provider's settings",
	help: "Change the provider NAME of a project. --link-by-email yes lets a first sign-in with it sign in\n" +
		"the existing account of an address it says is verified (and link it); no refuses that sign-in\n" +
		"(SIGN_IN_WITH_EMAIL_FIRST) unless the provider account is already linked. Turn it on only for a\n" +
		"provider whose addresses you trust.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		link := fs.String("link-by-email", "", "`YES_OR_NO`: link first sign-ins to existing accounts by verified address (required)")
		return func(ctx context.Context, c *call) error {
			for _, f := range []string{"project", "link-by-email"} {
				if !c.set[f] {
					return usagef("--%s is required", f)
				}
			}
			v, err := yesNo("link-by-email", *link)
			if err != nil {
				return err
			}
			var resp struct {
				Provider provider `json:"provider"`
			}
			return c.send(ctx, "PATCH", "/api/v1/admin/projects/"+pathID(*projectID)+"/providers/"+pathID(c.args[0]), nil,
				map[string]any{"linkByEmail": v}, &resp, func() error {
					return printProviders(c, resp.Provider)
				})
		}
	},
}

// yesNo reads a yes-or-no flag's value: yes, no, true or false (any
// case).
func yesNo(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes", "true":
		return true, nil
	case "no", "false":
		return false, nil
	}
	return false, usagef("--%s must be yes or no", name)
}

var providerRemove = &command{
	name:    "provider remove",
	args:    []string{"NAME"},
	summary: "remove a sign-in provider from a project",
	help:    "Remove the provider NAME from a project; sign-ins started with it fail at the callback.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			return c.send(ctx, "DELETE", "/api/v1/admin/projects/"+pathID(*projectID)+"/providers/"+pathID(c.args[0]), nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Provider %s removed.\n", c.args[0])
				return err
			})
		}
	},
}

func printProviders(c *call, ps ...provider) error {
	t := newTable(c.out, "NAME", "TYPE", "CLIENT", "ISSUER", "SCOPES", "LINK-BY-EMAIL", "RESPONSE", "CREATED")
	for _, p := range ps {
		link := "no"
		if p.LinkByEmail {
			link = "yes"
		}
		t.row(p.Name, p.Type, p.ClientID, deref(p.Issuer), strings.Join(p.Scopes, " "), link, p.ResponseMode, humanTime(p.CreatedAt))
	}
	return t.flush()
}
