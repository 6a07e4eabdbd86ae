package auth

import "latchkey/store"

// grantRevokedClientDeleted is the RevokedFor of the grants revoked
// because their client was deleted.
const grantRevokedClientDeleted = "client deleted"

// revokeClientGrants revokes, inside tx, every grant of projectID's
// client clientID (the grants by client: as many reads as the client
// has grants). A revoked grant ends its access tokens (userinfo and
// introspection read the grant) and its refresh tokens (a refresh, an
// introspection or a revocation of one reads the grant first); the
// sweep deletes it at its expiry, as any grant.
func (s *Service) revokeClientGrants(tx store.Tx, projectID, clientID string) error {
	grants, err := tx.OIDCClientGrants(projectID, clientID)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	for _, g := range grants {
		if !g.RevokedAt.IsZero() {
			continue
		}
		g.RevokedAt, g.RevokedFor = now, grantRevokedClientDeleted
		if err := tx.PutOIDCGrant(g); err != nil {
			return err
		}
	}
	return nil
}
