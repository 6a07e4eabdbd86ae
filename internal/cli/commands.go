package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Wire shapes of the admin API (docs/api.md, Admin API).

type project struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	CompanyID          string   `json:"companyId"`
	AllowedOrigins     []string `json:"allowedOrigins"`
	RPID               string   `json:"rpId"`
	SessionTTLSeconds  int      `json:"sessionTtlSeconds"`
	RateLimitPerMinute int      `json:"rateLimitPerMinute"`
	DenyCIDRs          []string `json:"denyCidrs"`
	EmailChange        string   `json:"emailChange"`
	// SessionRateLimitPerMinute is the per-session limit of the calls
	// that write.
	SessionRateLimitPerMinute int    `json:"sessionRateLimitPerMinute"`
	CreatedAt                 string `json:"createdAt"`
	// SessionIdleSeconds and SessionMaxSeconds bound a session's
	// refreshes: unrefreshed for the one, or older than the other, it
	// ends.
	SessionIdleSeconds int `json:"sessionIdleSeconds"`
	SessionMaxSeconds  int `json:"sessionMaxSeconds"`
	// ForwardAuth is the forward-auth settings as JSON (null: none).
	ForwardAuth json.RawMessage `json:"forwardAuth"`
	// ClientRegistration is whether OpenID Connect clients may register
	// themselves: open or closed.
	ClientRegistration string `json:"clientRegistration"`
}

type apiKey struct {
	Prefix    string  `json:"prefix"`
	ProjectID *string `json:"projectId"`
	Mode      string  `json:"mode"`
	ExpiresAt *string `json:"expiresAt"`
	Revoked   bool    `json:"revoked"`
	CreatedAt string  `json:"createdAt"`
}

type registration struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Method    string `json:"method"`
	Pattern   string `json:"pattern"`
	Status    string `json:"status"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"createdAt"`
}

type user struct {
	ID             string          `json:"id"`
	Email          string          `json:"email"`
	ExternalUserID *string         `json:"externalUserId"`
	CompanyID      *string         `json:"companyId"`
	EmailVerified  bool            `json:"emailVerified"`
	Disabled       bool            `json:"disabled"`
	CreatedAt      string          `json:"createdAt"`
	Groups         []string        `json:"groups"`
	Metadata       json.RawMessage `json:"metadata"`
}

type event struct {
	ProjectID   *string `json:"projectId"`
	Email       *string `json:"email"`
	Method      string  `json:"method"`
	Action      string  `json:"action"`
	Success     bool    `json:"success"`
	FailureCode *string `json:"failureCode"`
	IP          string  `json:"ip"`
	CreatedAt   string  `json:"createdAt"`
}

// Projects.

var projectCreate = &command{
	name:    "project create",
	summary: "create a project",
	help:    "Create a project. --name is required; the other flags default as the server decides.",
	flags: func(fs *flag.FlagSet) action {
		body := projectFlags(fs)
		return func(ctx context.Context, c *call) error {
			if !c.set["name"] {
				return usagef("--name is required")
			}
			var resp struct {
				Project project `json:"project"`
			}
			return c.send(ctx, "POST", "/api/v1/admin/projects", nil, body(c), &resp, func() error {
				return printProject(c, resp.Project)
			})
		}
	},
}

var projectList = &command{
	name:    "project list",
	summary: "list projects",
	help:    "List every project.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			var resp struct {
				Projects []project `json:"projects"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/projects", nil, nil, &resp, func() error {
				if len(resp.Projects) == 0 {
					_, err := fmt.Fprintln(c.out, "No projects.")
					return err
				}
				t := newTable(c.out, "ID", "NAME", "ORIGINS", "RP ID", "SESSION TTL", "RATE/MIN", "SESSION RATE/MIN", "DENY CIDRS", "EMAIL CHANGE", "COMPANY ID", "CREATED")
				for _, p := range resp.Projects {
					t.row(p.ID, p.Name, list(p.AllowedOrigins), p.RPID, humanSeconds(p.SessionTTLSeconds),
						strconv.Itoa(p.RateLimitPerMinute), strconv.Itoa(p.SessionRateLimitPerMinute), list(p.DenyCIDRs), p.EmailChange, p.CompanyID, humanTime(p.CreatedAt))
				}
				return t.flush()
			})
		}
	},
}

var projectUpdate = &command{
	name:    "project update",
	args:    []string{"ID"},
	summary: "change a project's settings",
	help: "Change a project: only the flags given are sent. A repeatable flag replaces the\n" +
		"whole list (--origin \"\" empties it); --rp-id \"\" goes back to the derived rpId.",
	flags: func(fs *flag.FlagSet) action {
		body := projectFlags(fs)
		return func(ctx context.Context, c *call) error {
			b := body(c)
			if len(b) == 0 {
				return usagef("nothing to update: give at least one of --name, --origin, --company-id, --rp-id, --session-ttl, --session-idle, --session-max, --rate-limit, --session-rate-limit, --deny-cidr, --email-change, --forward-auth")
			}
			var resp struct {
				Project project `json:"project"`
			}
			return c.send(ctx, "PATCH", "/api/v1/admin/projects/"+pathID(c.args[0]), nil, b, &resp, func() error {
				return printProject(c, resp.Project)
			})
		}
	},
}

var projectDelete = &command{
	name:    "project delete",
	args:    []string{"ID"},
	summary: "delete a project and all its data",
	help: "Delete the project ID at once, with its users, sessions, factors, passkeys, codes,\n" +
		"external methods and webhooks. Its API keys are kept but detached (they answer\n" +
		"INVALID_API_KEY); its authentication events stay. There is no undo.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id := c.args[0]
			return c.send(ctx, "DELETE", "/api/v1/admin/projects/"+pathID(id), nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Deleted project %s and its data; its API keys are detached.\n", cell(id))
				return err
			})
		}
	},
}

// projectFlags declares the project fields as flags and returns a
// function that builds the request body from the flags that were set.
func projectFlags(fs *flag.FlagSet) func(c *call) map[string]any {
	name := fs.String("name", "", "project `NAME` (1 to 100 characters)")
	var origins, deny listFlag
	fs.Var(&origins, "origin", "allowed `ORIGIN` scheme://host[:port]; repeat or separate with commas")
	companyID := fs.String("company-id", "", "`ID` of the organisation owning the project (default on create: a new UUID)")
	rpID := fs.String("rp-id", "", "WebAuthn relying party `HOST` (default: the first origin's host)")
	ttl := fs.Int("session-ttl", 0, "session token lifetime in `SECONDS` (300 to 7776000; server default 86400)")
	idle := fs.Int("session-idle", 0, "a session not refreshed for `SECONDS` ends (300 to 31536000, at least --session-ttl; server default 604800)")
	most := fs.Int("session-max", 0, "no session is refreshed `SECONDS` after its sign-in (300 to 31536000, at least --session-idle; server default 2592000)")
	rate := fs.Int("rate-limit", 0, "API key requests per minute, `N` (server default 100)")
	sessionRate := fs.Int("session-rate-limit", 0, "calls that write per minute per user session, `N` (1 to 100000; server default 120; reads are never limited)")
	fs.Var(&deny, "deny-cidr", "refuse logins from `CIDR`; repeat or separate with commas")
	emailChange := fs.String("email-change", "", "how users change their address, `MODE`: verify (a code to the new address) or direct (server default verify)")
	displayName := fs.String("display-name", "", "`NAME` the hosted pages show (at most 100 characters; \"\" removes it: they show --name)")
	logoURL := fs.String("logo-url", "", "https `URL` of the hosted pages' logo (\"\" removes it)")
	accent := fs.String("accent-color", "", "the hosted pages' accent `COLOUR`, #rrggbb (\"\" restores the built-in)")
	registration := fs.String("client-registration", "", "dynamic OpenID Connect client registration, `MODE`: open (apps and agents register their own public clients) or closed (server default closed)")
	forwardAuth := fs.String("forward-auth", "", "forward-auth settings as `JSON`: {\"cookieDomain\": ..., \"rules\": [{\"host\", \"pathPrefix\", \"policy\", \"groups\"}]}, or null to remove them (docs/forward-auth.md)")
	return func(c *call) map[string]any {
		b := map[string]any{}
		for flagName, set := range map[string]func(){
			"name":               func() { b["name"] = *name },
			"origin":             func() { b["allowedOrigins"] = []string(origins) },
			"company-id":         func() { b["companyId"] = *companyID },
			"rp-id":              func() { b["rpId"] = *rpID },
			"session-ttl":        func() { b["sessionTtlSeconds"] = *ttl },
			"rate-limit":         func() { b["rateLimitPerMinute"] = *rate },
			"deny-cidr":          func() { b["denyCidrs"] = []string(deny) },
			"session-rate-limit": func() { b["sessionRateLimitPerMinute"] = *sessionRate },
			"session-idle":       func() { b["sessionIdleSeconds"] = *idle },
			"session-max":        func() { b["sessionMaxSeconds"] = *most },
			"display-name":       func() { b["displayName"] = *displayName },
			"logo-url":           func() { b["logoUrl"] = *logoURL },
			"accent-color":       func() { b["accentColor"] = *accent },
		} {
			if c.set[flagName] {
				set()
			}
		}
		if c.set["email-change"] {
			b["emailChange"] = *emailChange
		}
		if c.set["client-registration"] {
			b["clientRegistration"] = *registration
		}
		if c.set["forward-auth"] {
			// Sent as given: the server checks it and names what is wrong.
			if json.Valid([]byte(*forwardAuth)) {
				b["forwardAuth"] = json.RawMessage(*forwardAuth)
			} else {
				b["forwardAuth"] = *forwardAuth
			}
		}
		return b
	}
}

func printProject(c *call, p project) error {
	return details(c.out,
		"ID", p.ID,
		"Name", p.Name,
		"Company ID", p.CompanyID,
		"Allowed origins", list(p.AllowedOrigins),
		"RP ID", p.RPID,
		"Session TTL", fmt.Sprintf("%s (%d s)", humanSeconds(p.SessionTTLSeconds), p.SessionTTLSeconds),
		"Session idle", fmt.Sprintf("%s (%d s) without a refresh", humanSeconds(p.SessionIdleSeconds), p.SessionIdleSeconds),
		"Session maximum", fmt.Sprintf("%s (%d s) after the sign-in", humanSeconds(p.SessionMaxSeconds), p.SessionMaxSeconds),
		"Rate limit", fmt.Sprintf("%d/min per key", p.RateLimitPerMinute),
		"Session rate limit", fmt.Sprintf("%d/min per session (calls that write)", p.SessionRateLimitPerMinute),
		"Deny CIDRs", list(p.DenyCIDRs),
		"Email change", p.EmailChange,
		"Forward-auth", forwardAuthText(p.ForwardAuth),
		"Client registration", p.ClientRegistration,
		"Created", humanTime(p.CreatedAt),
	)
}

// API keys.

var keyCreate = &command{
	name:    "key create",
	summary: "create an API key (printed once)",
	help: "Create an API key for the project given by --project. The key is printed once:\n" +
		"store it before closing the terminal.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` the key belongs to (required unless --no-project)")
		noProject := fs.Bool("no-project", false, "create a key without a project: it authenticates but every project call answers INVALID_API_KEY")
		mode := fs.String("mode", "test", "key `MODE`: live or test")
		expires := fs.String("expires", "", "expiry `TIME`, RFC 3339 such as 2027-01-31T00:00:00Z (default: never)")
		return func(ctx context.Context, c *call) error {
			switch {
			case c.set["project"] && *noProject:
				return usagef("give --project ID or --no-project, not both")
			case !c.set["project"] && !*noProject:
				return usagef("--project is required (a key without a project can call no endpoint; say --no-project to make one anyway)")
			case c.set["project"] && *projectID == "":
				return usagef("--project needs a project ID")
			}
			if *mode != "live" && *mode != "test" {
				return usagef("--mode must be live or test, got %q", *mode)
			}
			body := map[string]any{"mode": *mode}
			if *projectID != "" {
				body["projectId"] = *projectID
			}
			if c.set["expires"] {
				if _, err := time.Parse(time.RFC3339, *expires); err != nil {
					return usagef("--expires must be an RFC 3339 time such as 2027-01-31T00:00:00Z, got %q", *expires)
				}
				body["expiresAt"] = *expires
			}
			var resp struct {
				Key    string `json:"key"`
				APIKey apiKey `json:"apiKey"`
			}
			return c.send(ctx, "POST", "/api/v1/admin/keys", nil, body, &resp, func() error {
				fmt.Fprintf(c.out, "API key (shown once; it cannot be retrieved later):\n\n    %s\n\n", resp.Key)
				return printKeys(c, []apiKey{resp.APIKey})
			})
		}
	},
}

var keyList = &command{
	name:    "key list",
	summary: "list API keys (never the keys themselves)",
	help:    "List API keys by prefix, all or one project's.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "only the keys of project `ID`")
		return func(ctx context.Context, c *call) error {
			q := url.Values{}
			if *projectID != "" {
				q.Set("projectId", *projectID)
			}
			var resp struct {
				APIKeys []apiKey `json:"apiKeys"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/keys", q, nil, &resp, func() error {
				if len(resp.APIKeys) == 0 {
					_, err := fmt.Fprintln(c.out, "No API keys.")
					return err
				}
				return printKeys(c, resp.APIKeys)
			})
		}
	},
}

var keyRevoke = &command{
	name:    "key revoke",
	args:    []string{"PREFIX"},
	summary: "revoke an API key by its prefix",
	help:    "Revoke the API key whose prefix (sk_live_… or sk_test_… and 8 characters) is PREFIX.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			prefix := c.args[0]
			return c.send(ctx, "POST", "/api/v1/admin/keys/"+pathID(prefix)+"/revoke", nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Revoked API key %s.\n", cell(prefix))
				return err
			})
		}
	},
}

func printKeys(c *call, keys []apiKey) error {
	now := time.Now()
	t := newTable(c.out, "PREFIX", "MODE", "PROJECT", "STATUS", "EXPIRES", "CREATED")
	for _, k := range keys {
		status := "active"
		if k.Revoked {
			status = "revoked"
		} else if k.ExpiresAt != nil {
			if e, err := time.Parse(time.RFC3339Nano, *k.ExpiresAt); err == nil && !e.After(now) {
				status = "expired"
			}
		}
		expires := "never"
		if k.ExpiresAt != nil {
			expires = humanTime(*k.ExpiresAt)
		}
		t.row(k.Prefix, k.Mode, deref(k.ProjectID), status, expires, humanTime(k.CreatedAt))
	}
	return t.flush()
}

// External methods.

var methodCreate = &command{
	name:    "method create",
	summary: "register an external method (secret printed once)",
	help: "Register an external authentication method (BYOAM) for a project. The secret,\n" +
		"which signs confirm calls, is printed once.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		method := fs.String("method", "", "method `NAME`, [a-z0-9_-]{1,64} (required)")
		pattern := fs.String("pattern", "", "`PATTERN`: direct or webhook (required)")
		return func(ctx context.Context, c *call) error {
			for _, f := range []string{"project", "method", "pattern"} {
				if !c.set[f] {
					return usagef("--%s is required", f)
				}
			}
			if *pattern != "direct" && *pattern != "webhook" {
				return usagef("--pattern must be direct or webhook, got %q", *pattern)
			}
			body := map[string]any{"method": *method, "pattern": *pattern}
			var resp struct {
				Registration registration `json:"registration"`
			}
			return c.send(ctx, "POST", "/api/v1/admin/projects/"+pathID(*projectID)+"/external-methods", nil, body, &resp, func() error {
				fmt.Fprintf(c.out, "Method secret (shown once; it cannot be retrieved later):\n\n    %s\n\n", resp.Registration.Secret)
				return printMethods(c, resp.Registration)
			})
		}
	},
}

var methodList = &command{
	name:    "method list",
	summary: "list a project's external methods (never the secrets)",
	help:    "List the external method registrations of a project, oldest first.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Registrations []registration `json:"registrations"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/projects/"+pathID(*projectID)+"/external-methods", nil, nil, &resp, func() error {
				if len(resp.Registrations) == 0 {
					_, err := fmt.Fprintln(c.out, "No external methods.")
					return err
				}
				return printMethods(c, resp.Registrations...)
			})
		}
	},
}

// methodStatus is `method disable|enable ID`: PATCH the registration's status.
func methodStatus(verb, status string) *command {
	return &command{
		name:    "method " + verb,
		args:    []string{"ID"},
		summary: verb + " an external method registration",
		help:    fmt.Sprintf("Set the external method registration ID to %s.", status),
		flags: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				var resp struct {
					Registration registration `json:"registration"`
				}
				body := map[string]any{"status": status}
				return c.send(ctx, "PATCH", "/api/v1/admin/external-methods/"+pathID(c.args[0]), nil, body, &resp, func() error {
					return printMethods(c, resp.Registration)
				})
			}
		},
	}
}

func printMethods(c *call, ms ...registration) error {
	t := newTable(c.out, "ID", "PROJECT", "METHOD", "PATTERN", "STATUS", "CREATED")
	for _, m := range ms {
		t.row(m.ID, m.ProjectID, m.Method, m.Pattern, m.Status, humanTime(m.CreatedAt))
	}
	return t.flush()
}

// Users.

var userList = &command{
	name:    "user list",
	summary: "list a project's users",
	help: "List a project's users in email order, a page at a time. --email with an address finds that user; anything else is an address prefix.\n" +
		"A page ends with the --cursor that gives the next one; --all follows them to the last page (with --json, one response body per page).",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		email := fs.String("email", "", "`ADDRESS` or address prefix to search for")
		limit := fs.Int("limit", 0, "at most `N` users per page, 1 to 1000 (server default 100)")
		cursor := fs.String("cursor", "", "start after the page that printed `CURSOR`")
		all := fs.Bool("all", false, "follow the cursor through every page")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			q := url.Values{"projectId": {*projectID}}
			if *email != "" {
				q.Set("email", *email)
			}
			if c.set["limit"] {
				if *limit < 1 {
					return usagef("--limit must be a positive integer")
				}
				q.Set("limit", strconv.Itoa(*limit))
			}
			if *cursor != "" {
				q.Set("cursor", *cursor)
			}
			for page := 0; ; page++ {
				var resp struct {
					Users      []user  `json:"users"`
					NextCursor *string `json:"nextCursor"`
				}
				err := c.send(ctx, "GET", "/api/v1/admin/users", q, nil, &resp, func() error {
					if len(resp.Users) == 0 {
						if page > 0 {
							return nil
						}
						_, err := fmt.Fprintln(c.out, "No users.")
						return err
					}
					if err := printUsers(c, resp.Users...); err != nil {
						return err
					}
					if resp.NextCursor != nil && !*all {
						_, err := fmt.Fprintf(c.out, "More users: add --cursor %s\n", cell(*resp.NextCursor))
						return err
					}
					return nil
				})
				if err != nil || !*all {
					return err
				}
				if c.json { // send printed the body; the cursor is in it
					if err := json.Unmarshal(c.lastBody, &resp); err != nil {
						return err
					}
				}
				if resp.NextCursor == nil {
					return nil
				}
				q.Set("cursor", *resp.NextCursor)
			}
		}
	},
}

func printUsers(c *call, users ...user) error {
	t := newTable(c.out, "ID", "EMAIL", "VERIFIED", "EXTERNAL ID", "COMPANY ID", "GROUPS", "STATUS", "CREATED")
	for _, u := range users {
		status, verified := "active", "no"
		if u.Disabled {
			status = "disabled"
		}
		if u.EmailVerified {
			verified = "yes"
		}
		t.row(u.ID, u.Email, verified, deref(u.ExternalUserID), deref(u.CompanyID), list(u.Groups), status, humanTime(u.CreatedAt))
	}
	return t.flush()
}

var userUpdate = &command{
	name:    "user update",
	args:    []string{"ID"},
	summary: "change a user's company, groups or metadata",
	help: "Change the user ID: only the flags given are sent, the rest stays. --company-id sets\n" +
		"the companyId (--no-company or --company-id '' clears it). --group replaces the whole\n" +
		"list of groups (repeat it or separate with commas; --group '' clears them). --metadata\n" +
		"replaces the metadata with a JSON object ('' or '{}' clears it).",
	flags: func(fs *flag.FlagSet) action {
		companyID := fs.String("company-id", "", "the user's company `ID`, 1 to 128 characters ('' clears it)")
		noCompany := fs.Bool("no-company", false, "clear the user's company (companyId null)")
		var groups listFlag
		fs.Var(&groups, "group", "the user's groups: group `NAME`s of a-z, 0-9, '.', '_' and '-'; repeat or separate with commas ('' clears them)")
		metadata := fs.String("metadata", "", "the user's metadata, a JSON `OBJECT` such as '{\"role\":\"admin\"}' of at most 4096 bytes ('' clears it)")
		return func(ctx context.Context, c *call) error {
			body := map[string]any{}
			switch {
			case c.set["company-id"] && *noCompany:
				return usagef("give --company-id or --no-company, not both")
			case c.set["company-id"] && *companyID != "":
				body["companyId"] = *companyID
			case c.set["company-id"] || *noCompany:
				body["companyId"] = nil
			}
			if c.set["group"] {
				body["groups"] = []string(groups)
			}
			if c.set["metadata"] {
				body["metadata"] = nil
				if m := strings.TrimSpace(*metadata); m != "" {
					if !json.Valid([]byte(m)) || m[0] != '{' {
						return usagef("--metadata must be a JSON object such as '{\"role\":\"admin\"}', got %s", *metadata)
					}
					body["metadata"] = json.RawMessage(m)
				}
			}
			if len(body) == 0 {
				return usagef("nothing to update: give --company-id ID, --no-company, --group NAME or --metadata JSON")
			}
			var resp struct {
				User user `json:"user"`
			}
			return c.send(ctx, "PATCH", "/api/v1/admin/users/"+pathID(c.args[0]), nil, body, &resp, func() error {
				if err := printUsers(c, resp.User); err != nil {
					return err
				}
				_, err := fmt.Fprintf(c.out, "Metadata: %s\n", cell(string(resp.User.Metadata)))
				return err
			})
		}
	},
}

var userDelete = &command{
	name:    "user delete",
	args:    []string{"ID"},
	summary: "delete a user and everything that is theirs",
	help: "Delete the user ID at once, as the user's own DELETE /user does: sessions, factors,\n" +
		"backup codes, passkeys and pending codes go with it; user.deleted is emitted.\n" +
		"There is no undo.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id := c.args[0]
			return c.send(ctx, "DELETE", "/api/v1/admin/users/"+pathID(id), nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Deleted user %s.\n", cell(id))
				return err
			})
		}
	},
}

// userState is `user disable|enable ID`.
func userState(verb, done string) *command {
	help := "Enable the user ID."
	if verb == "disable" {
		help = "Disable the user ID: their sessions are revoked and they cannot log in."
	}
	return &command{
		name:    "user " + verb,
		args:    []string{"ID"},
		summary: verb + " a user",
		help:    help,
		flags: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				id := c.args[0]
				return c.send(ctx, "POST", "/api/v1/admin/users/"+pathID(id)+"/"+verb, nil, nil, nil, func() error {
					_, err := fmt.Fprintf(c.out, done, cell(id))
					return err
				})
			}
		},
	}
}

var userResetTOTP = &command{
	name:    "user reset-totp",
	args:    []string{"ID"},
	summary: "lift a user's TOTP lockout",
	help: "Clear the TOTP failure count and lockout of the user ID, the lock after 100\n" +
		"failures included; the enrolment stays. A sign-in with a backup code does the same.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id := c.args[0]
			return c.send(ctx, "POST", "/api/v1/admin/users/"+pathID(id)+"/factors/totp/reset", nil, map[string]any{}, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Reset the TOTP lockout of user %s; the enrolment stays.\n", cell(id))
				return err
			})
		}
	},
}

var userResetSMS = &command{
	name:    "user reset-sms",
	args:    []string{"ID"},
	summary: "lift a user's SMS lockout",
	help: "Clear the failure count and lockout of the enrolled phone of the user ID, the\n" +
		"lock after 100 failures included; the phone stays enrolled. A sign-in with a\n" +
		"backup code does the same.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id := c.args[0]
			return c.send(ctx, "POST", "/api/v1/admin/users/"+pathID(id)+"/factors/sms/reset", nil, map[string]any{}, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Reset the SMS lockout of user %s; the phone stays enrolled.\n", cell(id))
				return err
			})
		}
	},
}

// Events.

// failureCategories are the failure categories events carry (the
// contract's table, in its order).
var failureCategories = []string{
	"invalid_code", "expired", "already_used", "rate_limited", "user_not_found", "user_disabled",
	"user_exists", "validation_error", "risk_blocked", "external_method_error", "internal_error",
}

var events = &command{
	name:    "events",
	summary: "list recent authentication events, newest first",
	help:    "List authentication events, newest first.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "only events of project `ID`")
		failure := fs.String("failure-code", "", "only failures of `CATEGORY`: "+strings.Join(failureCategories, ", "))
		limit := fs.Int("limit", 0, "at most `N` events, 1 to 1000 (server default 100)")
		before := fs.String("before", "", "only events older than `CURSOR` (printed after a page) or an RFC 3339 time")
		return func(ctx context.Context, c *call) error {
			q := url.Values{}
			if *projectID != "" {
				q.Set("projectId", *projectID)
			}
			if c.set["failure-code"] {
				if !slices.Contains(failureCategories, *failure) {
					return usagef("--failure-code must be one of %s; got %q", strings.Join(failureCategories, ", "), *failure)
				}
				q.Set("failureCode", *failure)
			}
			if c.set["limit"] {
				if *limit < 1 {
					return usagef("--limit must be a positive integer")
				}
				q.Set("limit", strconv.Itoa(*limit))
			}
			if *before != "" {
				q.Set("before", *before)
			}
			var resp struct {
				Events     []event `json:"events"`
				NextCursor *string `json:"nextCursor"`
				Suppressed []struct {
					Count int64 `json:"count"`
				} `json:"suppressed"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/events", q, nil, &resp, func() error {
				var suppressed int64
				for _, s := range resp.Suppressed {
					suppressed += s.Count
				}
				if suppressed > 0 {
					what := count(suppressed, "failure") + " that name no user were"
					if suppressed == 1 {
						what = "1 failure that names no user was"
					}
					defer fmt.Fprintf(c.out, "Also %s counted but not stored in these hours (--json lists them).\n", what)
				}
				if len(resp.Events) == 0 {
					_, err := fmt.Fprintln(c.out, "No events.")
					return err
				}
				if resp.NextCursor != nil {
					defer fmt.Fprintf(c.out, "Older events: add --before %s\n", cell(*resp.NextCursor))
				}
				t := newTable(c.out, "TIME", "PROJECT", "METHOD", "ACTION", "RESULT", "EMAIL", "IP")
				for _, e := range resp.Events {
					result := "ok"
					if !e.Success {
						result = "failed"
						if e.FailureCode != nil {
							result = *e.FailureCode
						}
					}
					t.row(humanTime(e.CreatedAt), deref(e.ProjectID), e.Method, e.Action, result, deref(e.Email), e.IP)
				}
				return t.flush()
			})
		}
	},
}

// Webhooks.

type webhookView struct {
	ID         string   `json:"id"`
	ProjectID  string   `json:"projectId"`
	URL        string   `json:"url"`
	EventTypes []string `json:"eventTypes"`
	Mode       string   `json:"mode"`
	CreatedAt  string   `json:"createdAt"`
}

var webhookList = &command{
	name:    "webhook list",
	summary: "list a project's webhooks (never the secrets)",
	help:    "List the webhooks of a project, oldest first, whichever key mode created them.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Webhooks []webhookView `json:"webhooks"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/projects/"+pathID(*projectID)+"/webhooks", nil, nil, &resp, func() error {
				if len(resp.Webhooks) == 0 {
					_, err := fmt.Fprintln(c.out, "No webhooks.")
					return err
				}
				t := newTable(c.out, "ID", "URL", "MODE", "EVENTS", "CREATED")
				for _, h := range resp.Webhooks {
					events := "all"
					if h.EventTypes != nil {
						events = list(h.EventTypes)
					}
					t.row(h.ID, h.URL, h.Mode, events, humanTime(h.CreatedAt))
				}
				return t.flush()
			})
		}
	},
}

// forwardAuthText shows forward-auth settings as compact JSON, "none"
// without.
func forwardAuthText(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || string(raw) == "null" || json.Compact(&b, raw) != nil {
		return "none"
	}
	return b.String()
}
