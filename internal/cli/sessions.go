package cli

import (
	"context"
	"flag"
	"fmt"
)

// session is a user's session as the admin API shows it.
type session struct {
	ID         string  `json:"id"`
	Method     string  `json:"method"`
	CreatedAt  string  `json:"createdAt"`
	ExpiresAt  string  `json:"expiresAt"`
	LastSeenAt string  `json:"lastSeenAt"`
	IP         *string `json:"ip"`
	UserAgent  *string `json:"userAgent"`
}

var userSessions = &command{
	name:    "user sessions",
	args:    []string{"ID"},
	summary: "list a user's sessions, newest first",
	help: "List the live sessions of the user ID, newest first, with where each was signed in\n" +
		"from. LAST SEEN may lag by up to a minute.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			var resp struct {
				Sessions []session `json:"sessions"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/users/"+pathID(c.args[0])+"/sessions", nil, nil, &resp, func() error {
				if len(resp.Sessions) == 0 {
					_, err := fmt.Fprintln(c.out, "No sessions.")
					return err
				}
				t := newTable(c.out, "ID", "METHOD", "CREATED", "LAST SEEN", "EXPIRES", "IP", "USER AGENT")
				for _, s := range resp.Sessions {
					t.row(s.ID, s.Method, humanTime(s.CreatedAt), humanTime(s.LastSeenAt), humanTime(s.ExpiresAt), deref(s.IP), deref(s.UserAgent))
				}
				return t.flush()
			})
		}
	},
}

var userRevokeSessions = &command{
	name:    "user revoke-sessions",
	args:    []string{"ID"},
	summary: "end every session of a user",
	help:    "End every session of the user ID: their tokens stop working at once. The user can sign in again.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id := c.args[0]
			var resp struct {
				Revoked int `json:"revoked"`
			}
			return c.send(ctx, "POST", "/api/v1/admin/users/"+pathID(id)+"/sessions/revoke", nil, map[string]any{}, &resp, func() error {
				_, err := fmt.Fprintf(c.out, "Ended %s of user %s.\n", count(resp.Revoked, "session"), cell(id))
				return err
			})
		}
	},
}
