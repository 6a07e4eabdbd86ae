package cli

import (
	"context"
	"flag"
	"fmt"
)

// consent is a user's consent to a third-party client as the admin API
// shows it.
type consent struct {
	ClientID   string   `json:"clientId"`
	ClientName string   `json:"clientName"`
	Scopes     []string `json:"scopes"`
	GrantedAt  string   `json:"grantedAt"`
	UpdatedAt  string   `json:"updatedAt"`
}

var userConsents = &command{
	name:    "user consents",
	args:    []string{"ID"},
	summary: "list the apps a user allowed",
	help: "List the consents of the user ID: each third-party OpenID Connect client they\n" +
		"allowed, the scopes allowed so far, when first given and last widened.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			var resp struct {
				Consents []consent `json:"consents"`
			}
			return c.send(ctx, "GET", "/api/v1/admin/users/"+pathID(c.args[0])+"/consents", nil, nil, &resp, func() error {
				if len(resp.Consents) == 0 {
					_, err := fmt.Fprintln(c.out, "No consents.")
					return err
				}
				t := newTable(c.out, "CLIENT ID", "CLIENT", "SCOPES", "GRANTED", "UPDATED")
				for _, k := range resp.Consents {
					t.row(k.ClientID, k.ClientName, list(k.Scopes), humanTime(k.GrantedAt), humanTime(k.UpdatedAt))
				}
				return t.flush()
			})
		}
	},
}

var userRevokeConsent = &command{
	name:    "user revoke-consent",
	args:    []string{"ID", "CLIENT_ID"},
	summary: "revoke a user's consent to an app",
	help: "Revoke the consent of the user ID to the client CLIENT_ID: every access and refresh\n" +
		"token the client holds for the user stops working at once, and the user's next\n" +
		"sign-in with it asks for consent again.",
	flags: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, c *call) error {
			id, client := c.args[0], c.args[1]
			return c.send(ctx, "DELETE", "/api/v1/admin/users/"+pathID(id)+"/consents/"+pathID(client), nil, nil, nil, func() error {
				_, err := fmt.Fprintf(c.out, "Revoked the consent of user %s to client %s; its tokens for the user are revoked.\n", cell(id), cell(client))
				return err
			})
		}
	},
}
