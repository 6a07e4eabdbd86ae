package postgres

import (
	"errors"
	"time"

	"latchkey/store"
)

// errNotImplemented answers the methods not yet written for PostgreSQL.
var errNotImplemented = errors.New("postgres: not implemented yet")

func (tx *txn) Project(id string) (*store.Project, error) { return nil, errNotImplemented }
func (tx *txn) PutProject(p *store.Project) error         { return errNotImplemented }
func (tx *txn) Projects() ([]*store.Project, error)       { return nil, errNotImplemented }
func (tx *txn) DeleteProject(id string) (detached []string, err error) {
	err = errNotImplemented
	return
}
func (tx *txn) APIKey(prefix string) (*store.APIKey, error)       { return nil, errNotImplemented }
func (tx *txn) PutAPIKey(k *store.APIKey) error                   { return errNotImplemented }
func (tx *txn) APIKeys(projectID string) ([]*store.APIKey, error) { return nil, errNotImplemented }
func (tx *txn) User(id string) (*store.User, error)               { return nil, errNotImplemented }
func (tx *txn) UserByEmail(projectID, email string) (*store.User, error) {
	return nil, errNotImplemented
}
func (tx *txn) UserByExternalID(projectID, ext string) (*store.User, error) {
	return nil, errNotImplemented
}
func (tx *txn) PutUser(u *store.User) error    { return errNotImplemented }
func (tx *txn) DeleteUser(u *store.User) error { return errNotImplemented }
func (tx *txn) Users(projectID, emailPrefix, after string, limit int) (users []*store.User, more bool, err error) {
	err = errNotImplemented
	return
}
func (tx *txn) Session(id string) (*store.Session, error)    { return nil, errNotImplemented }
func (tx *txn) SessionExists(id string) (bool, error)        { return false, errNotImplemented }
func (tx *txn) PutSession(s *store.Session) error            { return errNotImplemented }
func (tx *txn) DeleteSession(s *store.Session) error         { return errNotImplemented }
func (tx *txn) UserSessions(userID string) ([]string, error) { return nil, errNotImplemented }
func (tx *txn) UserSessionRows(userID string) ([]*store.Session, error) {
	return nil, errNotImplemented
}
func (tx *txn) RecentUserSessions(userID string, limit int) ([]*store.Session, bool, error) {
	return nil, false, errNotImplemented
}
func (tx *txn) TouchSession(id string, t time.Time, grace time.Duration) error {
	return errNotImplemented
}
func (tx *txn) DeleteUserSessions(userID string) error { return errNotImplemented }
func (tx *txn) Code(kind, projectID, subject string) (*store.Code, error) {
	return nil, errNotImplemented
}
func (tx *txn) PutCode(c *store.Code) error    { return errNotImplemented }
func (tx *txn) DeleteCode(c *store.Code) error { return errNotImplemented }
func (tx *txn) Throttle(kind, projectID, subject string) (*store.Throttle, error) {
	return nil, errNotImplemented
}
func (tx *txn) PutThrottle(kind, projectID, subject string, t *store.Throttle) error {
	return errNotImplemented
}
func (tx *txn) MagicLink(hash []byte) (*store.MagicLink, error)       { return nil, errNotImplemented }
func (tx *txn) PutMagicLink(m *store.MagicLink) error                 { return errNotImplemented }
func (tx *txn) DeleteMagicLinks(projectID, email string) (int, error) { return 0, errNotImplemented }
func (tx *txn) Device(key []byte) (*store.Device, error)              { return nil, errNotImplemented }
func (tx *txn) PutDevice(d *store.Device) error                       { return errNotImplemented }
func (tx *txn) Factor(userID, kind string) (*store.Factor, error)     { return nil, errNotImplemented }
func (tx *txn) PutFactor(f *store.Factor) error                       { return errNotImplemented }
func (tx *txn) BackupCodes(userID string) (*store.BackupCodes, error) { return nil, errNotImplemented }
func (tx *txn) PutBackupCodes(b *store.BackupCodes) error             { return errNotImplemented }
func (tx *txn) Grant(hash []byte) (*store.Grant, error)               { return nil, errNotImplemented }
func (tx *txn) PutGrant(g *store.Grant) error                         { return errNotImplemented }
func (tx *txn) DeleteGrants(projectID, externalUserID string) (int, error) {
	return 0, errNotImplemented
}
func (tx *txn) Passkey(projectID, id string) (*store.Passkey, error) { return nil, errNotImplemented }
func (tx *txn) PutPasskey(pk *store.Passkey) error                   { return errNotImplemented }
func (tx *txn) DeletePasskey(pk *store.Passkey) error                { return errNotImplemented }
func (tx *txn) UserPasskeys(projectID, userID string) ([]*store.Passkey, error) {
	return nil, errNotImplemented
}
func (tx *txn) Challenge(id string) (*store.Challenge, error) { return nil, errNotImplemented }
func (tx *txn) PutChallenge(c *store.Challenge) error         { return errNotImplemented }
func (tx *txn) DeleteChallenge(id string) error               { return errNotImplemented }
func (tx *txn) ExternalMethod(id string) (*store.ExternalMethod, error) {
	return nil, errNotImplemented
}
func (tx *txn) ExternalMethodByName(projectID, method string) (*store.ExternalMethod, error) {
	return nil, errNotImplemented
}
func (tx *txn) ExternalMethods(projectID string) ([]*store.ExternalMethod, error) {
	return nil, errNotImplemented
}
func (tx *txn) PutExternalMethod(m *store.ExternalMethod) error { return errNotImplemented }

// Helpers other files call across domains; each domain's file replaces
// its stub.

// deleteUserFactors removes the user's factors (totp, sms), backup codes
// and passkeys (DeleteUser).
func (tx *txn) deleteUserFactors(userID string) error { return errNotImplemented }

// deleteProjectAuthRows removes what DeleteProject removes of codes, send
// and failure histories (whose project is projectID or one of
// methodIDs), magic links, challenges, external methods and their grants.
func (tx *txn) deleteProjectAuthRows(projectID string, methodIDs []string) error {
	return errNotImplemented
}
