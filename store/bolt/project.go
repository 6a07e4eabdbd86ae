package bolt

import (
	"bytes"

	"latchkey/store"
)

// Project returns the project with id.
func (tx txn) Project(id string) (*store.Project, error) {
	var p store.Project
	if err := tx.get(bucketProjects, []byte(id), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// PutProject creates or replaces a project.
func (tx txn) PutProject(p *store.Project) error {
	return tx.put(bucketProjects, []byte(p.ID), p)
}

// Projects returns every project in id order.
func (tx txn) Projects() ([]*store.Project, error) {
	var out []*store.Project
	err := tx.bucket(bucketProjects).ForEach(func(k, v []byte) error {
		var p store.Project
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
// devices, WebAuthn challenges, sign-ins with providers in flight,
// external-method registrations and their grants; its mail templates and
// its OpenID provider's signing keys and clients; its webhooks with their
// queued deliveries and history. Its
// API keys stay but are detached (no project), so they answer
// INVALID_API_KEY and still show, and can be revoked, in the key list;
// their prefixes are returned so callers can drop cached copies.
// Authentication events (history, swept after 30 days), outbox events
// already written and queued mail stay. It returns ErrNotFound when the
// project does not exist.
//
// Rows not indexed by project (codes, links, devices, challenges,
// sign-ins in flight, methods, grants, keys) are found by a scan of their bucket; users,
// passkeys, provider links, templates, signing keys, clients and webhooks through
// their per-project keys.
func (tx txn) DeleteProject(id string) (detached []string, err error) {
	if tx.bucket(bucketProjects).Get([]byte(id)) == nil {
		return nil, store.ErrNotFound
	}
	prefix := compound(id, "")
	var userIDs []string
	c := tx.bucket(bucketUsersByEmail).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		userIDs = append(userIDs, userIDOf(v))
	}
	for _, uid := range userIDs {
		u, err := tx.User(uid)
		if err == store.ErrNotFound {
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
	var passkeys []*store.Passkey
	pc := tx.bucket(bucketPasskeys).Cursor()
	for k, v := pc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = pc.Next() {
		var pk store.Passkey
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
	for _, b := range [][]byte{bucketUsersByEmail, bucketUsersByExt, bucketTemplates, bucketOIDCKeys, bucketOIDCClients,
		bucketOIDCConsents, bucketOIDCClientConsents} {
		if err := tx.deletePrefix(b, prefix); err != nil {
			return nil, err
		}
	}

	// External methods first: their ids scope their replay marks.
	scopes := map[string]bool{id: true}
	err = tx.bucket(bucketMethods).ForEach(func(k, v []byte) error {
		var m store.ExternalMethod
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
	for _, kind := range []store.Expiring{store.ExpiringMagicLinks, store.ExpiringDevices, store.ExpiringChallenges, store.ExpiringOAuthFlows, store.ExpiringGrants,
		store.ExpiringOIDCAuthRequests, store.ExpiringOIDCGrants, store.ExpiringOIDCRefreshTokens, store.ExpiringOIDCRevokedTokens,
		store.ExpiringOIDCDeviceAuths} {
		_, err := tx.deleteExpiringWhere(&expiries[kind], func(_, _ []byte, h expiryRow) (bool, error) {
			return h.projectID == id, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Codes and send histories (codeKeyParts).
	_, err = tx.deleteExpiringWhere(&expiries[store.ExpiringCodes], func(k, _ []byte, _ expiryRow) (bool, error) {
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
func (tx txn) deletePrefix(bucket, prefix []byte) error {
	c := tx.bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
