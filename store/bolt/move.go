package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// store.Mover of a bbolt file: Export walks the buckets of one read
// transaction (exportBuckets), decoding each row; Import writes through the
// Tx methods (which keep every index, so the buckets of notExported
// are rebuilt) in write transactions of importChunk records.

var _ store.Mover = (*DB)(nil)

// importChunk is how many records one write transaction of an import
// holds: bbolt keeps a transaction's pages in memory until its commit.
const importChunk = 20_000

// Export calls fn with every record of the file (Mover).
func (db *DB) Export(ctx context.Context, fn func(rec any) error) error {
	return db.bolt.View(func(btx *bbolt.Tx) error {
		meta := btx.Bucket(bucketMeta)
		st := &store.Settings{AdminTokenHash: clone(meta.Get(keyAdminToken)), Initialized: meta.Get(keyInitialized) != nil,
			MasterKeyCheck: clone(meta.Get(keyKeyCheck))}
		if err := fn(st); err != nil {
			return err
		}
		for _, s := range exportBuckets {
			c := btx.Bucket(s.bucket).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				rec, err := s.decode(k, v)
				if err != nil {
					return err
				}
				if rec == nil {
					continue
				}
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// exportBuckets is what Export walks after the settings (bucketMeta), in
// the order of the Mover contract: each bucket with the decoding of its
// rows into records (nil: a row that is not one). With bucketMeta, its
// buckets are the ones a copy carries; every other bucket is in
// notExported.
var exportBuckets = []struct {
	bucket []byte
	decode func(k, v []byte) (any, error)
}{
	{bucketTLSCache, jsonRow(func() any { return &store.TLSCacheEntry{} })},
	{bucketProjects, jsonRow(func() any { return &store.Project{} })},
	{bucketKeys, jsonRow(func() any { return &store.APIKey{} })},
	{bucketUsers, func(k, v []byte) (any, error) { return decodeUser(k, v) }},
	{bucketSessions, func(k, v []byte) (any, error) { return decodeSession(k, v) }},
	{bucketRefresh, func(k, v []byte) (any, error) { return decodeRefresh(k, v) }},
	{bucketCodes, func(k, v []byte) (any, error) {
		if !isThrottleKey(k) {
			return decodeCode(v)
		}
		kind, project, subject, ok := codeKeyParts(k)
		if !ok {
			return nil, errBadRecord
		}
		t, err := decodeThrottle(v)
		if err != nil {
			return nil, err
		}
		return &store.ThrottleRecord{Kind: string(kind), ProjectID: string(project), Subject: string(subject), Throttle: *t}, nil
	}},
	{bucketMagic, jsonRow(func() any { return &store.MagicLink{} })},
	{bucketDevices, func(k, v []byte) (any, error) { return decodeDevice(k, v) }},
	{bucketFactors, jsonRow(func() any { return &store.Factor{} })},
	{bucketBackupCodes, jsonRow(func() any { return &store.BackupCodes{} })},
	{bucketGrants, jsonRow(func() any { return &store.Grant{} })},
	{bucketPasskeys, func(_, v []byte) (any, error) {
		pk := &store.Passkey{}
		return pk, jsonDecode(v, (*passkeyRow)(pk))
	}},
	{bucketIdentities, jsonRow(func() any { return &store.Identity{} })},
	{bucketChallenges, func(_, v []byte) (any, error) {
		c := &store.Challenge{}
		return c, jsonDecode(v, (*challengeRow)(c))
	}},
	{bucketOAuthFlows, jsonRow(func() any { return &store.OAuthFlow{} })},
	{bucketMethods, jsonRow(func() any { return &store.ExternalMethod{} })},
	{bucketTemplates, jsonRow(func() any { return &store.Template{} })},
	{bucketOIDCKeys, jsonRow(func() any { return &store.OIDCKey{} })},
	{bucketOIDCClients, jsonRow(func() any { return &store.OIDCClient{} })},
	{bucketOIDCAuthRequests, jsonRow(func() any { return &store.OIDCAuthRequest{} })},
	{bucketOIDCGrants, jsonRow(func() any { return &store.OIDCGrant{} })},
	{bucketOIDCRefresh, jsonRow(func() any { return &store.OIDCRefreshToken{} })},
	{bucketOIDCRevoked, jsonRow(func() any { return &store.OIDCRevokedToken{} })},
	{bucketOIDCConsents, jsonRow(func() any { return &store.OIDCConsent{} })},
	{bucketOIDCDevices, jsonRow(func() any { return &store.OIDCDeviceAuth{} })},
	{bucketWebhooks, jsonRow(func() any { return &store.Webhook{} })},
	{bucketJobs, jsonRow(func() any { return &store.Job{} })},
	{bucketDeliveries, func(_, v []byte) (any, error) {
		d := &store.Delivery{}
		return d, jsonDecode(v, (*deliveryRow)(d))
	}},
	{bucketOutbox, func(k, v []byte) (any, error) { return decodeEvent(k, v) }},
	{bucketMail, func(k, v []byte) (any, error) { return decodeMail(k, v) }},
	{bucketEvents, func(k, v []byte) (any, error) { return decodeAuthEvent(k, v) }},
	{bucketEventCounts, func(k, v []byte) (any, error) {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) < i+5 {
			return nil, errBadRecord
		}
		hour := binary.BigEndian.Uint32(k[i+1:])
		if hour == noHour {
			return nil, nil // a scope's kept events: counted again by the import
		}
		return &store.EventCount{Scope: string(k[:i]), Hour: int64(hour), Kind: string(k[i+5:]), N: int64(getU64(v))}, nil
	}},
	{bucketEventSuppressed, func(k, v []byte) (any, error) {
		if len(k) < 4 {
			return nil, errBadRecord
		}
		parts := strings.SplitN(string(k[4:]), "\x00", 4)
		if len(parts) != 4 {
			return nil, errBadRecord
		}
		return &store.SuppressedCount{Hour: unixHour(int64(binary.BigEndian.Uint32(k))), ProjectID: parts[0], Method: parts[1],
			Action: parts[2], FailureCode: parts[3], N: int64(getU64(v))}, nil
	}},
}

// jsonRow decodes a JSON row into the record newRec makes.
func jsonRow(newRec func() any) func(k, v []byte) (any, error) {
	return func(_, v []byte) (any, error) {
		rec := newRec()
		return rec, jsonDecode(v, rec)
	}
}

// notExported names the buckets Export does not walk, each with why
// a copy needs none of its rows: the import rebuilds them, as the Tx
// methods it writes with keep them, or they are not data.
var notExported = map[string]string{
	// Indexes, written with the rows they index.
	string(bucketUsersByEmail):       "index of users by address (PutUser)",
	string(bucketUsersByExt):         "index of users by external id (PutUser)",
	string(bucketUserSessions):       "index of sessions by user (PutSession)",
	string(bucketUserPasskeys):       "index of passkeys by user (PutPasskey)",
	string(bucketUserIdentities):     "index of provider links by user (PutIdentity)",
	string(bucketEventIndex):         "index of authentication events by scope and kind (the import of each event)",
	string(bucketOIDCUserGrants):     "index of OpenID grants by user (PutOIDCGrant)",
	string(bucketOIDCClientConsents): "index of consents by client (PutOIDCConsent)",
	string(bucketOIDCSessionGrants):  "index of OpenID grants by session (PutOIDCGrant)",
	string(bucketOIDCClientGrants):   "index of OpenID grants by client (PutOIDCGrant)",
	// Expiry indexes (expiry.go), written with their rows.
	string(bucketSessionsExpiry):    "expiry index of sessions (PutSession)",
	string(bucketCodesExpiry):       "expiry index of codes and send histories (PutCode, PutThrottle)",
	string(bucketMagicExpiry):       "expiry index of magic links (PutMagicLink)",
	string(bucketChallengesExpiry):  "expiry index of challenges (PutChallenge)",
	string(bucketGrantsExpiry):      "expiry index of grants (PutGrant)",
	string(bucketDevicesExpiry):     "expiry index of remembered devices (PutDevice)",
	string(bucketDeliveriesExpiry):  "expiry index of delivery records (AddDelivery)",
	string(bucketOAuthFlowsExpiry):  "expiry index of sign-ins with providers in flight (PutOAuthFlow)",
	string(bucketRefreshExpiry):     "expiry index of refresh tokens (PutRefreshToken)",
	string(bucketOIDCAuthExpiry):    "expiry index of authorization requests (PutOIDCAuthRequest)",
	string(bucketOIDCGrantsExpiry):  "expiry index of OpenID grants (PutOIDCGrant)",
	string(bucketOIDCRefreshExpiry): "expiry index of OpenID refresh tokens (PutOIDCRefreshToken)",
	string(bucketOIDCRevokedExpiry): "expiry index of revoked OpenID access tokens (PutOIDCRevokedToken)",
	string(bucketOIDCDevicesExpiry): "expiry index of OpenID device authorizations (PutOIDCDeviceAuth)",
	string(bucketOIDCDeviceCodes):   "index of OpenID device authorizations by user code (PutOIDCDeviceAuth)",
}

// bbolt keeps dashboard sessions and the counts of the approximate rate
// limits in memory, in no bucket: a copy has none to carry (they belong
// to the running process; see the Mover contract). Of bucketMeta, Export
// carries the settings (Settings); the schema version and the progress
// of a migration are the target's own, written by Open. Of
// bucketEventCounts, it carries the hourly counters (EventCount); each
// scope's count of kept events is counted again by the import of the
// events.

// Import returns an Importer into the file, which must hold no data
// (Mover).
func (db *DB) Import(ctx context.Context) (store.Importer, error) {
	err := db.bolt.View(func(btx *bbolt.Tx) error {
		for _, name := range allBuckets {
			c := btx.Bucket(name).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if !bytes.Equal(name, bucketMeta) || !bytes.Equal(k, keySchema) {
					return store.ErrNotEmpty
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &importer{db: db}, nil
}

// importer writes an import in chunks of importChunk records.
type importer struct {
	db     *DB
	btx    *bbolt.Tx
	n      int    // records in btx
	maxJob uint64 // the highest job sequence number imported
}

// Add writes rec (Importer).
func (im *importer) Add(rec any) error {
	if im.btx == nil {
		btx, err := im.db.bolt.Begin(true)
		if err != nil {
			return err
		}
		im.btx = btx
	}
	tx := txn{im.btx}
	switch r := rec.(type) {
	case *store.AuthEvent:
		if err := tx.importAuthEvent(r); err != nil {
			return err
		}
	case *store.EventCount:
		if strings.IndexByte(r.Scope, 0) >= 0 || r.Hour < 0 || r.Hour >= noHour {
			return store.ErrBadEventField
		}
		b := tx.bucket(bucketEventCounts)
		b.FillPercent = appendFill
		if err := b.Put(countKey(r.Scope, uint32(r.Hour), r.Kind), u64(uint64(r.N))); err != nil {
			return err
		}
	case *store.SuppressedCount:
		for _, s := range []string{r.ProjectID, r.Method, r.Action, r.FailureCode} {
			if strings.IndexByte(s, 0) >= 0 {
				return store.ErrBadEventField
			}
		}
		b := tx.bucket(bucketEventSuppressed)
		b.FillPercent = appendFill
		if err := b.Put(suppressedKey(r), u64(uint64(r.N))); err != nil {
			return err
		}
	default:
		ok, err := store.ImportTx(tx, rec)
		if err != nil {
			return err
		}
		if !ok {
			return errRecord(rec)
		}
		if j, isJob := rec.(*store.Job); isJob {
			im.maxJob = max(im.maxJob, j.Seq)
		}
	}
	if im.n++; im.n >= importChunk {
		return im.commitChunk()
	}
	return nil
}

// commitChunk commits the current write transaction.
func (im *importer) commitChunk() error {
	if im.btx == nil {
		return nil
	}
	btx := im.btx
	im.btx, im.n = nil, 0
	return btx.Commit()
}

// Commit writes the last chunk, with the job sequence past every job
// imported (Importer).
func (im *importer) Commit() error {
	if im.maxJob > 0 {
		if im.btx == nil {
			btx, err := im.db.bolt.Begin(true)
			if err != nil {
				return err
			}
			im.btx = btx
		}
		if b := im.btx.Bucket(bucketJobs); b.Sequence() < im.maxJob {
			if err := b.SetSequence(im.maxJob); err != nil {
				im.Rollback()
				return err
			}
		}
	}
	return im.commitChunk()
}

// Rollback drops the current chunk; the chunks committed before stay
// (the caller removes the file).
func (im *importer) Rollback() {
	if im.btx != nil {
		im.btx.Rollback()
		im.btx = nil
	}
}

// importAuthEvent stores an exported event as AddAuthEvent does (a new
// position in the same time order, its index entry, its project's kept
// count) but without counting it in the hourly counters, which the
// import copies (EventCount), nor trimming.
func (tx txn) importAuthEvent(e *store.AuthEvent) error {
	kind := eventKind(e)
	if strings.IndexByte(e.ProjectID, 0) >= 0 || strings.IndexByte(kind, 0) >= 0 {
		return store.ErrBadEventField
	}
	events := tx.bucket(bucketEvents)
	seq, err := events.NextSequence()
	if err != nil {
		return err
	}
	ev := *e
	ev.Pos = store.EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: seq}
	pk := posKey(ev.Pos)
	events.FillPercent = appendFill
	if err := events.Put(pk, encodeAuthEvent(&ev)); err != nil {
		return err
	}
	index := tx.bucket(bucketEventIndex)
	index.FillPercent = appendFill
	if err := index.Put(append(indexPrefix(ev.ProjectID, kind), pk...), []byte{}); err != nil {
		return err
	}
	_, err = tx.addTotal(ev.ProjectID, 1)
	return err
}

// errRecord is Add's error for a value Export never passes.
func errRecord(rec any) error { return fmt.Errorf("store: import: %T is not a record", rec) }

// unixHour is the time of Unix hour h.
func unixHour(h int64) time.Time { return time.Unix(h*3600, 0).UTC() }
