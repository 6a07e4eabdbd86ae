package store

import (
	"bytes"
	"time"
)

// Project is one application using latchkey: its users, keys and settings.
type Project struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	CompanyID          string    `json:"companyId"`
	AllowedOrigins     []string  `json:"allowedOrigins"`
	RPID               string    `json:"rpId"`
	SessionTTLSeconds  int       `json:"sessionTtlSeconds"`
	RateLimitPerMinute int       `json:"rateLimitPerMinute"`
	DenyCIDRs          []string  `json:"denyCidrs"`
	CreatedAt          time.Time `json:"createdAt"`

	// EmailChange is how PATCH /user changes an address: "verify" (by a
	// code sent to the new address) or "direct"; empty means "verify".
	EmailChange string `json:"emailChange,omitempty"`

	// SessionRateLimitPerMinute is how many calls with one session's
	// token that write or start a ceremony the session may make per
	// rolling minute; 0 (projects stored before it existed) means the
	// default.
	SessionRateLimitPerMinute int `json:"sessionRateLimitPerMinute,omitempty"`

	// SigningKeyID is the JWT "kid" of the project's ES256 key.
	SigningKeyID string `json:"signingKeyId"`
	// SigningKey is the PKCS#8 private key, sealed with the keyring.
	SigningKey []byte `json:"signingKey"`
	// PublicKey is the PKIX public key, published in the JWKS.
	PublicKey []byte `json:"publicKey"`

	// Providers are the project's OAuth 2.0 / OpenID Connect sign-in
	// providers, in the order they were added; names are unique in the
	// project. Nil when there are none.
	Providers []Provider `json:"providers,omitempty"`
}

// Provider is one OAuth 2.0 / OpenID Connect provider of a project.
type Provider struct {
	ID       string `json:"id"`
	Name     string `json:"name"` // slug, unique in the project
	Type     string `json:"type"` // oidc, github, google, apple, microsoft
	ClientID string `json:"clientId"`
	// Secret is the client secret sealed with the keyring (additional
	// data "provider:"+ID); never returned by the API.
	Secret    []byte    `json:"secret"`
	Issuer    string    `json:"issuer,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// ResponseMode is how the provider returns the browser to the
	// callback: "query" (a redirect) or "form_post" (a form the browser
	// posts); empty (providers stored before it existed) means the
	// type's default.
	ResponseMode string `json:"responseMode,omitempty"`
	// LinkByEmail says whether a first sign-in with the provider may
	// sign in the existing account of the address it vouches for; nil
	// in providers stored before the setting existed (auth decides what
	// that means).
	LinkByEmail *bool `json:"linkByEmail,omitempty"`
}

// Project returns the project with id.
func (tx boltTx) Project(id string) (*Project, error) {
	var p Project
	if err := tx.get(bucketProjects, []byte(id), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PutProject creates or replaces a project.
func (tx boltTx) PutProject(p *Project) error {
	return tx.put(bucketProjects, []byte(p.ID), p)
}

// Projects returns every project in id order.
func (tx boltTx) Projects() ([]*Project, error) {
	var out []*Project
	err := tx.bucket(bucketProjects).ForEach(func(k, v []byte) error {
		var p Project
		if err := jsonDecode(v, &p); err != nil {
			return err
		}
		out = append(out, &p)
		return nil
	})
	return out, err
}

// DeleteProject removes project id and, in this transaction, everything
// that belongs to it: its users with their indexes, sessions, factors,
// backup codes, passkeys and links to sign-in providers; pending codes and send histories (the
// replay marks of its external methods too), magic links, remembered
// devices, WebAuthn challenges, external-method registrations and their
// grants; its webhooks with their queued deliveries and history. Its
// API keys stay but are detached (no project), so they answer
// INVALID_API_KEY and still show, and can be revoked, in the key list;
// their prefixes are returned so callers can drop cached copies.
// Authentication events (history, swept after 30 days), outbox events
// already written and queued mail stay. It returns ErrNotFound when the
// project does not exist.
//
// Rows not indexed by project (codes, links, devices, challenges,
// methods, grants, keys) are found by a scan of their bucket; users,
// passkeys, provider links and webhooks through their per-project keys.
func (tx boltTx) DeleteProject(id string) (detached []string, err error) {
	if tx.bucket(bucketProjects).Get([]byte(id)) == nil {
		return nil, ErrNotFound
	}
	prefix := compound(id, "")
	var userIDs []string
	c := tx.bucket(bucketUsersByEmail).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		userIDs = append(userIDs, userIDOf(v))
	}
	for _, uid := range userIDs {
		u, err := tx.User(uid)
		if err == ErrNotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		if err := tx.DeleteUser(u); err != nil {
			return nil, err
		}
	}
	// What the users' deletion left under the project's key prefix
	// (an index entry without its row, say).
	var passkeys []*Passkey
	pc := tx.bucket(bucketPasskeys).Cursor()
	for k, v := pc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = pc.Next() {
		var pk Passkey
		if err := jsonDecode(v, (*passkeyRow)(&pk)); err != nil {
			return nil, err
		}
		passkeys = append(passkeys, &pk)
	}
	for _, pk := range passkeys {
		if err := tx.DeletePasskey(pk); err != nil {
			return nil, err
		}
	}
	if err := tx.deleteProjectIdentities(id); err != nil {
		return nil, err
	}
	for _, b := range [][]byte{bucketUsersByEmail, bucketUsersByExt, bucketTemplates} {
		if err := tx.deletePrefix(b, prefix); err != nil {
			return nil, err
		}
	}

	// External methods first: their ids scope their replay marks.
	scopes := map[string]bool{id: true}
	err = tx.bucket(bucketMethods).ForEach(func(k, v []byte) error {
		var m ExternalMethod
		if err := jsonDecode(v, &m); err != nil {
			return err
		}
		if m.ProjectID == id {
			scopes[m.ID] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := tx.sweepKeys(bucketMethods, ownedBy(id)); err != nil {
		return nil, err
	}
	for _, kind := range []Expiring{ExpiringMagicLinks, ExpiringDevices, ExpiringChallenges, ExpiringGrants} {
		_, err := tx.deleteExpiringWhere(&expiries[kind], func(_, _ []byte, h expiryRow) (bool, error) {
			return h.projectID == id, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Codes and send histories (codeKeyParts).
	_, err = tx.deleteExpiringWhere(&expiries[ExpiringCodes], func(k, _ []byte, _ expiryRow) (bool, error) {
		_, scope, _, ok := codeKeyParts(k)
		return ok && scopes[string(scope)], nil
	})
	if err != nil {
		return nil, err
	}

	hooks, err := tx.Webhooks(id)
	if err != nil {
		return nil, err
	}
	for _, w := range hooks {
		if err := tx.DeleteWebhook(w); err != nil {
			return nil, err
		}
	}

	keys, err := tx.APIKeys(id)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		k.ProjectID = ""
		if err := tx.PutAPIKey(k); err != nil {
			return nil, err
		}
		detached = append(detached, k.Prefix)
	}
	return detached, tx.del(bucketProjects, []byte(id))
}

// ownedBy matches JSON rows whose "projectId" is projectID.
func ownedBy(projectID string) func(k, v []byte) (bool, error) {
	return func(_, v []byte) (bool, error) {
		var row struct {
			ProjectID string `json:"projectId"`
		}
		err := jsonDecode(v, &row)
		return err == nil && row.ProjectID == projectID, err
	}
}

// deletePrefix removes every key of bucket that starts with prefix.
func (tx boltTx) deletePrefix(bucket, prefix []byte) error {
	c := tx.bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
