package bolt

import (
	"bytes"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// keyEventMigration holds, while a version 1 file is being upgraded, the
// key of the last event already indexed.
var keyEventMigration = []byte("migrate_events_upto")

// migrateChunk is how many events one migration transaction indexes
// (a variable for the upgrade tests, which use smaller chunks: see
// smallMigrateChunks).
var migrateChunk = 20_000

// migrateEvents upgrades a version 1 file to version 2: it indexes and
// counts the authentication events already stored (version 1 kept them
// only in time order), migrateChunk per transaction, with its progress in
// meta so an interrupted upgrade resumes where it stopped; the last
// transaction sets version 2. Records keep their JSON encoding: they
// expire within the retention period. It runs once, at the first start
// of a binary that knows version 2, and reads every stored event: 7 s for
// 500,000 events on a shared 2-core machine (BenchmarkMigrateEvents).
func migrateEvents(b *bbolt.DB) error {
	for done := false; !done; {
		err := b.Update(func(btx *bbolt.Tx) error {
			tx := txn{btx}
			meta := tx.bucket(bucketMeta)
			index := tx.bucket(bucketEventIndex)
			index.FillPercent = appendFill
			from := clone(meta.Get(keyEventMigration))
			c := tx.bucket(bucketEvents).Cursor()
			k, v := c.First()
			if from != nil {
				if k, v = c.Seek(from); k != nil && bytes.Equal(k, from) {
					k, v = c.Next()
				}
			}
			var last []byte
			totals := map[string]int64{}
			for n := 0; k != nil && n < migrateChunk; k, v = c.Next() {
				scope, kind, err := eventHead(v)
				if err != nil {
					return err
				}
				if err := index.Put(append(indexPrefix(scope, kind), k...), []byte{}); err != nil {
					return err
				}
				hour := hourOf(time.Unix(0, posOf(k).Nanos))
				if err := tx.addCount(countKey(scope, hour, kind), 1); err != nil {
					return err
				}
				if err := tx.addCount(countKey(allScope, hour, kind), 1); err != nil {
					return err
				}
				totals[scope]++
				last = k
				n++
			}
			for scope, d := range totals {
				if _, err := tx.addTotal(scope, d); err != nil {
					return err
				}
			}
			if k != nil {
				return meta.Put(keyEventMigration, clone(last))
			}
			done = true
			if err := meta.Delete(keyEventMigration); err != nil {
				return err
			}
			return meta.Put(keySchema, u64(2))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// keyExpiryMigration holds, while a version 2 file is being upgraded, the
// expiring kind being indexed (one byte) and the key of its last row
// already indexed.
var keyExpiryMigration = []byte("migrate_expiry_upto")

// migrateExpiry upgrades a version 2 file to version 3: it builds the
// expiry index of every expiring kind (sessions, codes and send
// histories, magic links, challenges, grants, devices, webhook delivery
// records) from the rows already stored, migrateChunk rows per
// transaction, with its progress in meta so an interrupted upgrade
// resumes where it stopped; the last transaction sets version 3. Rows
// keep their encoding (every decoder reads the old JSON rows). It runs
// once, at the first start of a binary that knows version 3, reads every
// expiring row, and says so in the log.
func migrateExpiry(b *bbolt.DB, log *slog.Logger) error {
	start := time.Now()
	log.Info("upgrading the data file to version 3: indexing sessions, codes, devices and other expiring rows by expiry (once; an interrupted upgrade resumes at the next start)")
	total := 0
	for done := false; !done; {
		n := 0
		err := b.Update(func(btx *bbolt.Tx) error {
			tx := txn{btx}
			meta := tx.bucket(bucketMeta)
			kind, from := 0, []byte(nil)
			if pos := meta.Get(keyExpiryMigration); len(pos) > 0 {
				kind, from = int(pos[0]), clone(pos[1:])
			}
			for ; kind < len(expiries); kind, from = kind+1, nil {
				x := &expiries[kind]
				index := tx.bucket(x.index)
				c := tx.bucket(x.rows).Cursor()
				k, v := c.First()
				if from != nil {
					if k, v = c.Seek(from); k != nil && bytes.Equal(k, from) {
						k, v = c.Next()
					}
				}
				var last []byte
				for ; k != nil && n < migrateChunk; k, v = c.Next() {
					h, err := x.head(k, v)
					if err != nil {
						return fmt.Errorf("upgrade: %s row %q: %w", store.Expiring(kind), k, err)
					}
					if err := index.Put(dueKey(h.due, k), nil); err != nil {
						return err
					}
					last = k
					n++
				}
				if k != nil { // the chunk is full: resume after last
					return meta.Put(keyExpiryMigration, append([]byte{byte(kind)}, last...))
				}
			}
			done = true
			if err := meta.Delete(keyExpiryMigration); err != nil {
				return err
			}
			return meta.Put(keySchema, u64(3))
		})
		if err != nil {
			return err
		}
		total += n
		if !done {
			log.Info("upgrading the data file", "rows_indexed", total)
		}
	}
	log.Info("data file upgraded to version 3", "rows_indexed", total, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// migrateCodes upgrades a file to version 4: pending codes move to keys
// of their own at the start of the codes bucket (codeKey), apart from the
// send and failure histories they sat beside, with their expiry index
// entries. Codes live minutes, so there are few, and one transaction
// moves them; finding them reads the bucket once.
func migrateCodes(b *bbolt.DB, log *slog.Logger) error {
	start := time.Now()
	moved := 0
	err := b.Update(func(btx *bbolt.Tx) error {
		tx := txn{btx}
		x := &expiries[store.ExpiringCodes]
		rows, index := tx.bucket(x.rows), tx.bucket(x.index)
		var keys, values [][]byte
		err := rows.ForEach(func(k, v []byte) error {
			if !isThrottleKey(k) && (len(k) == 0 || k[0] != 0) {
				keys, values = append(keys, clone(k)), append(values, clone(v))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, k := range keys {
			h, err := x.head(k, values[i])
			if err != nil {
				return fmt.Errorf("upgrade: code row %q: %w", k, err)
			}
			to := append([]byte{0}, k...)
			if err := index.Delete(dueKey(h.due, k)); err != nil {
				return err
			}
			if err := index.Put(dueKey(h.due, to), nil); err != nil {
				return err
			}
			if err := rows.Delete(k); err != nil {
				return err
			}
			if err := rows.Put(to, values[i]); err != nil {
				return err
			}
		}
		moved = len(keys)
		return tx.bucket(bucketMeta).Put(keySchema, u64(4))
	})
	if err != nil {
		return err
	}
	log.Info("data file upgraded to version 4", "codes_moved", moved, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// oauthChallengeKinds maps the kinds of challenge rows that versions
// before 5 kept sign-ins with providers in flight as to the OAuthFlow
// kind each becomes.
var oauthChallengeKinds = map[string]string{
	"oauth_state": store.OAuthFlowState,
	"oauth_code":  store.OAuthFlowCode,
}

// migrateOAuthFlows upgrades a file to version 5: the sign-ins with
// providers in flight, which earlier versions kept among the WebAuthn
// challenges (kinds "oauth_state" and "oauth_code"), move to
// bucketOAuthFlows with their expiry index entries: same id (the keyed
// hash auth looks them up by), project, payload (the challenge's
// session, byte for byte) and expiry, so a sign-in in flight across the
// upgrade completes. They live minutes, so there are few, and one
// transaction moves them; finding them reads the challenges bucket once.
func migrateOAuthFlows(b *bbolt.DB, log *slog.Logger) error {
	start := time.Now()
	moved := 0
	err := b.Update(func(btx *bbolt.Tx) error {
		tx := txn{btx}
		var flows []*store.OAuthFlow
		err := tx.bucket(bucketChallenges).ForEach(func(k, v []byte) error {
			var c store.Challenge
			if err := jsonDecode(v, (*challengeRow)(&c)); err != nil {
				return fmt.Errorf("upgrade: challenge row %q: %w", k, err)
			}
			if kind, ok := oauthChallengeKinds[c.Kind]; ok {
				flows = append(flows, &store.OAuthFlow{ID: string(k), ProjectID: c.ProjectID, Kind: kind,
					Payload: []byte(c.Session), ExpiresAt: c.ExpiresAt})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, f := range flows {
			if err := tx.DeleteChallenge(f.ID); err != nil {
				return err
			}
			if err := tx.PutOAuthFlow(f); err != nil {
				return err
			}
		}
		moved = len(flows)
		return tx.bucket(bucketMeta).Put(keySchema, u64(5))
	})
	if err != nil {
		return err
	}
	log.Info("data file upgraded to version 5", "oauth_flows_moved", moved, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// migrateOIDCSessionGrants upgrades a file to version 6: the OpenID
// grants already stored are indexed by session
// (bucketOIDCSessionGrants), so that a session ending reaches the grants
// made under it (back-channel logout). Grants live at most the clients'
// refresh token lifetime; one transaction indexes them, reading the
// grants bucket once.
func migrateOIDCSessionGrants(b *bbolt.DB, log *slog.Logger) error {
	start := time.Now()
	indexed := 0
	err := b.Update(func(btx *bbolt.Tx) error {
		tx := txn{btx}
		index := tx.bucket(bucketOIDCSessionGrants)
		indexed = 0
		err := tx.bucket(bucketOIDCGrants).ForEach(func(k, v []byte) error {
			var g store.OIDCGrant
			if err := jsonDecode(v, &g); err != nil {
				return fmt.Errorf("upgrade: OpenID grant row %q: %w", k, err)
			}
			indexed++
			return index.Put(sessionGrantKey(&g), nil)
		})
		if err != nil {
			return err
		}
		return tx.bucket(bucketMeta).Put(keySchema, u64(6))
	})
	if err != nil {
		return err
	}
	log.Info("data file upgraded to version 6", "oidc_grants_indexed", indexed, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// migrateRefreshEncoding upgrades a file to version 7: refresh tokens
// are written in the compact encoding from now on. The rows already
// stored as JSON stay readable (decodeRefresh), so nothing is rewritten;
// the version alone makes an older binary refuse the file.
func migrateRefreshEncoding(b *bbolt.DB, log *slog.Logger) error {
	err := b.Update(func(btx *bbolt.Tx) error {
		return btx.Bucket(bucketMeta).Put(keySchema, u64(7))
	})
	if err == nil {
		log.Info("data file upgraded to version 7")
	}
	return err
}
