package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Moving a store to another backend (latchkey copy): every DB implements
// Mover. Export streams the records of one consistent snapshot as typed
// values, one at a time, and Import writes them into an empty store, so
// a copy holds a few records in memory, never the store. Secrets stay
// as they are (keyed hashes, sealed values): the copy needs the same
// master key.
//
// The values Export passes, in this order, and Import takes (RecordKinds
// lists them, by name, in this order):
//
//	*Settings         the instance settings (one)
//	*TLSCacheEntry    the certificates of automatic HTTPS (in Key order)
//	*Project, *APIKey, *User, *Session, *RefreshToken
//	*Code, *ThrottleRecord, *MagicLink, *Device
//	*Factor, *BackupCodes, *Grant, *Passkey, *Identity, *Challenge,
//	*OAuthFlow, *ExternalMethod
//	*Template         the projects' mail templates
//	*OIDCKey          the signing keys of the projects' OpenID providers
//	*OIDCClient       their clients
//	*OIDCAuthRequest  their authorization requests in flight
//	*OIDCGrant        their grants
//	*OIDCRefreshToken their refresh tokens
//	*OIDCRevokedToken their access tokens revoked before their expiry
//	*OIDCConsent      the users' consents to their third-party clients
//	*OIDCDeviceAuth   their device authorizations
//	*Webhook, *Job, *Delivery (in Seq order), *Event (outbox, in Seq
//	order), *Mail (in ID order)
//	*AuthEvent (in Pos order), *EventCount, *SuppressedCount
//
// Sequence numbers a store assigns (Delivery.Seq, Event.Seq, Mail.ID,
// AuthEvent.Pos.Seq) are assigned again by the target in the same order;
// jobs keep theirs. What else a backend keeps is rebuilt by the import
// (indexes, the events' kept numbers, the replicas' change feed) or not
// moved: dashboard sessions (an operator signs in again) and the counts
// of limits (a few minutes of requests and failures) are about the
// running processes, not the data. Each backend names, in code, its
// buckets or tables that Export carries and those it rebuilds or leaves,
// and a test fails when one is in neither list.

// Mover copies a store's records out and in.
type Mover interface {
	// Export calls fn with every record of one consistent snapshot, in
	// the order above, and stops at fn's first error, returning it.
	Export(ctx context.Context, fn func(rec any) error) error
	// Import returns an Importer that writes into this store, which
	// must hold no data (ErrNotEmpty otherwise).
	Import(ctx context.Context) (Importer, error)
}

// Importer writes the records of an Export into an empty store. It is
// not safe for concurrent use.
type Importer interface {
	// Add writes rec (one of the types Export passes); another type is
	// an error.
	Add(rec any) error
	// Commit makes every record added durable and ends the import.
	Commit() error
	// Rollback ends an import that will not be committed. What it
	// leaves behind depends on the backend: nothing on PostgreSQL (one
	// transaction); on bbolt, a file that the caller removes (it commits
	// in chunks, to bound memory).
	Rollback()
}

// ErrNotEmpty is returned by Import for a store that holds data.
var ErrNotEmpty = errors.New("store: the target is not empty")

// Settings are the instance settings of a store (Tx.AdminTokenHash,
// Initialized, MasterKeyCheck).
type Settings struct {
	AdminTokenHash []byte
	Initialized    bool
	MasterKeyCheck []byte
}

// ThrottleRecord is a send or failure history with its key.
type ThrottleRecord struct {
	Kind, ProjectID, Subject string
	Throttle
}

// EventCount is one hourly counter of authentication events: Scope is a
// project id, "" for events of no project, or "*" for the sum over every
// project; Hour is in Unix hours; Kind is "+" for successes, "~" for the
// failures counted but not stored, "?" for failures without a code, else
// the failure code.
type EventCount struct {
	Scope string
	Hour  int64
	Kind  string
	N     int64
}

// Copy copies every record of from into to, which must be empty, and
// returns how many records of each kind it copied (by RecordName). On
// failure the import is rolled back (see Importer.Rollback).
func Copy(ctx context.Context, from, to DB) (map[string]int, error) {
	imp, err := to.Import(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	err = from.Export(ctx, func(rec any) error {
		counts[RecordName(rec)]++
		return imp.Add(rec)
	})
	if err != nil {
		imp.Rollback()
		return counts, err
	}
	return counts, imp.Commit()
}

// recordKinds are the kinds of record of the Mover contract, in the
// order Export passes them, with their names.
var recordKinds = []struct {
	name string
	typ  reflect.Type
}{
	{"Settings", reflect.TypeFor[*Settings]()},
	{"TLSCacheEntry", reflect.TypeFor[*TLSCacheEntry]()},
	{"Project", reflect.TypeFor[*Project]()},
	{"APIKey", reflect.TypeFor[*APIKey]()},
	{"User", reflect.TypeFor[*User]()},
	{"Session", reflect.TypeFor[*Session]()},
	{"RefreshToken", reflect.TypeFor[*RefreshToken]()},
	{"Code", reflect.TypeFor[*Code]()},
	{"Throttle", reflect.TypeFor[*ThrottleRecord]()},
	{"MagicLink", reflect.TypeFor[*MagicLink]()},
	{"Device", reflect.TypeFor[*Device]()},
	{"Factor", reflect.TypeFor[*Factor]()},
	{"BackupCodes", reflect.TypeFor[*BackupCodes]()},
	{"Grant", reflect.TypeFor[*Grant]()},
	{"Passkey", reflect.TypeFor[*Passkey]()},
	{"Identity", reflect.TypeFor[*Identity]()},
	{"Challenge", reflect.TypeFor[*Challenge]()},
	{"OAuthFlow", reflect.TypeFor[*OAuthFlow]()},
	{"ExternalMethod", reflect.TypeFor[*ExternalMethod]()},
	{"Template", reflect.TypeFor[*Template]()},
	{"OIDCKey", reflect.TypeFor[*OIDCKey]()},
	{"OIDCClient", reflect.TypeFor[*OIDCClient]()},
	{"OIDCAuthRequest", reflect.TypeFor[*OIDCAuthRequest]()},
	{"OIDCGrant", reflect.TypeFor[*OIDCGrant]()},
	{"OIDCRefreshToken", reflect.TypeFor[*OIDCRefreshToken]()},
	{"OIDCRevokedToken", reflect.TypeFor[*OIDCRevokedToken]()},
	{"OIDCConsent", reflect.TypeFor[*OIDCConsent]()},
	{"OIDCDeviceAuth", reflect.TypeFor[*OIDCDeviceAuth]()},
	{"Webhook", reflect.TypeFor[*Webhook]()},
	{"Job", reflect.TypeFor[*Job]()},
	{"Delivery", reflect.TypeFor[*Delivery]()},
	{"Event", reflect.TypeFor[*Event]()},
	{"Mail", reflect.TypeFor[*Mail]()},
	{"AuthEvent", reflect.TypeFor[*AuthEvent]()},
	{"EventCount", reflect.TypeFor[*EventCount]()},
	{"SuppressedCount", reflect.TypeFor[*SuppressedCount]()},
}

// recordNames maps each kind of recordKinds to its name.
var recordNames = func() map[reflect.Type]string {
	m := make(map[reflect.Type]string, len(recordKinds))
	for _, k := range recordKinds {
		m[k.typ] = k.name
	}
	return m
}()

// RecordKinds returns the names of the kinds of record Export passes and
// Import takes, in the order Export passes them (the names Copy counts
// by: "Settings", "Project", ..., "SuppressedCount"). The caller may
// change the slice.
func RecordKinds() []string {
	out := make([]string, len(recordKinds))
	for i, k := range recordKinds {
		out[i] = k.name
	}
	return out
}

// RecordName returns the name of rec's kind in RecordKinds ("User" for a
// *User), or its Go type ("*store.Provider") when it is not a record.
func RecordName(rec any) string {
	if name, ok := recordNames[reflect.TypeOf(rec)]; ok {
		return name
	}
	return fmt.Sprintf("%T", rec)
}

// ImportTx writes rec with the Tx methods when its kind has one that
// keeps it as it is (every kind but *AuthEvent, *EventCount and
// *SuppressedCount, whose Tx methods count: a backend's Importer writes
// those itself) and reports whether it did. A backend's Importer calls
// it for the kinds it has nothing special to do for.
func ImportTx(tx Tx, rec any) (bool, error) {
	switch r := rec.(type) {
	case *Settings:
		if r.AdminTokenHash != nil {
			if err := tx.SetAdminTokenHash(r.AdminTokenHash); err != nil {
				return true, err
			}
		}
		if r.MasterKeyCheck != nil {
			if err := tx.SetMasterKeyCheck(r.MasterKeyCheck); err != nil {
				return true, err
			}
		}
		if r.Initialized {
			return true, tx.SetInitialized()
		}
		return true, nil
	case *TLSCacheEntry:
		return true, tx.PutTLSCacheEntry(r)
	case *Project:
		return true, tx.PutProject(r)
	case *APIKey:
		return true, tx.PutAPIKey(r)
	case *User:
		return true, tx.PutUser(r)
	case *Session:
		return true, tx.PutSession(r)
	case *RefreshToken:
		return true, tx.PutRefreshToken(r)
	case *Code:
		return true, tx.PutCode(r)
	case *ThrottleRecord:
		return true, tx.PutThrottle(r.Kind, r.ProjectID, r.Subject, &r.Throttle)
	case *MagicLink:
		return true, tx.PutMagicLink(r)
	case *Device:
		return true, tx.PutDevice(r)
	case *Factor:
		return true, tx.PutFactor(r)
	case *BackupCodes:
		return true, tx.PutBackupCodes(r)
	case *Grant:
		return true, tx.PutGrant(r)
	case *Passkey:
		return true, tx.PutPasskey(r)
	case *Identity:
		return true, tx.PutIdentity(r)
	case *Challenge:
		return true, tx.PutChallenge(r)
	case *OAuthFlow:
		return true, tx.PutOAuthFlow(r)
	case *ExternalMethod:
		return true, tx.PutExternalMethod(r)
	case *Template:
		return true, tx.PutTemplate(r)
	case *OIDCKey:
		return true, tx.AddOIDCKey(r)
	case *OIDCClient:
		return true, tx.PutOIDCClient(r)
	case *OIDCAuthRequest:
		return true, tx.PutOIDCAuthRequest(r)
	case *OIDCGrant:
		return true, tx.PutOIDCGrant(r)
	case *OIDCRefreshToken:
		return true, tx.PutOIDCRefreshToken(r)
	case *OIDCRevokedToken:
		return true, tx.PutOIDCRevokedToken(r)
	case *OIDCConsent:
		return true, tx.PutOIDCConsent(r)
	case *OIDCDeviceAuth:
		return true, tx.PutOIDCDeviceAuth(r)
	case *Webhook:
		return true, tx.PutWebhook(r)
	case *Job:
		if r.Seq == 0 {
			return true, errors.New("store: import of a job without a sequence number")
		}
		return true, tx.EnqueueJob(r)
	case *Delivery:
		d := *r
		return true, tx.AddDelivery(&d)
	case *Event:
		e := *r
		return true, tx.AppendEvent(&e)
	case *Mail:
		m := *r
		return true, tx.EnqueueMail(&m)
	}
	return false, nil
}
