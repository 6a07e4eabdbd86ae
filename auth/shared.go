package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"latchkey/store"
)

// Limits across replicas (docs/replicas.md, "Limits across replicas").
// On a store that several
// processes share (store.Shared: PostgreSQL) the risk engine's velocity
// counts are rows, checked and counted by one statement each (exact),
// and the request rates (per API key, per session, per admin address)
// are counted by each replica in memory, as on bbolt, plus what the other
// replicas counted: SyncLimits, about twice a second, publishes this
// replica's counts per slot of store.RateSlot seconds and reads the
// others' for the keys it serves. A request is allowed when this
// replica's count in the rolling minute plus the others' counts in the
// ten slots inside that minute is below the limit. The limit is then
// approximate, within two bounds: the part of the minute before the
// oldest whole slot (at most one slot, 10% of the minute) is not
// counted, and the others' requests since their last sync and this
// replica's last read (at most one second together) are not seen yet.
// On bbolt (one process) nothing of this runs: the counts are in memory
// only and exact.

// SyncInterval is how often SyncLimits should run on a shared store:
// each replica's unseen requests are then at most about one second old.
const SyncInterval = 500 * time.Millisecond

// rateSlots is how many slots of store.RateSlot seconds a rolling
// minute counts.
const rateSlots = 60 / store.RateSlot

// velocityRule is the risk engine's limit as the store applies it; a
// reserved slot that its replica never settled (it died) stops counting
// after Hold.
var velocityRule = store.VelocityRule{Max: RiskMaxFailures, BlockFor: RiskBlockFor, Hold: 2 * time.Minute}

// hashDomainVelocity keys the velocity rows: the store sees a keyed hash
// of the project and address or account, never the address itself.
const hashDomainVelocity = "velocity"

// shared is the part of the Service that counts across replicas; nil
// fields and a nil *shared mean a store of one process (bbolt).
type shared struct {
	db      store.Shared
	replica string // this process's id in the rate counts

	keys, sessions, admin *rateShare

	synced  atomic.Int64 // the slot of the last successful sync (its counts are published)
	pushAll atomic.Bool  // the last sync failed: publish every key's slots again
	failing atomic.Bool  // the last sync failed (log once per failure run)
}

func newShared(db store.DB) *shared {
	sh, ok := db.(store.Shared)
	if !ok {
		return nil
	}
	return &shared{db: sh, replica: uuid.NewString(),
		keys: &rateShare{ns: "k:"}, sessions: &rateShare{ns: "s:"}, admin: &rateShare{ns: "a:"}}
}

// rateShare is what the other replicas counted for the keys of one
// limit, by key, as of the last sync. Reads are lock-free: a key's
// remote is replaced whole by the sync.
type rateShare struct {
	ns     string   // the keys' namespace in the store
	others sync.Map // key → *remote
}

// remote is the other replicas' counts of one key in the slots of a
// rolling minute, in a ring indexed by slot % rateSlots.
type remote struct {
	slot [rateSlots]int64
	n    [rateSlots]int32
}

// count returns what the other replicas counted for key in the slots
// inside the minute ending at Unix second sec (0 on a store of one
// process), and the start of the oldest of those slots holding any (0:
// none).
func (r *rateShare) count(key string, sec int64) (n int, oldest int64) {
	if r == nil {
		return 0, 0
	}
	v, ok := r.others.Load(key)
	if !ok {
		return 0, 0
	}
	rm := v.(*remote)
	cur := sec / store.RateSlot
	for i := range rm.slot {
		if s := rm.slot[i]; s > cur-rateSlots && s <= cur && rm.n[i] > 0 {
			n += int(rm.n[i])
			if start := s * store.RateSlot; oldest == 0 || start < oldest {
				oldest = start
			}
		}
	}
	return n, oldest
}

// replace sets the others' counts to got (key without the namespace →
// its remote), dropping keys it does not name.
func (r *rateShare) replace(got map[string]*remote) {
	r.others.Range(func(k, _ any) bool {
		if _, ok := got[k.(string)]; !ok {
			r.others.Delete(k)
		}
		return true
	})
	for k, rm := range got {
		r.others.Store(k, rm)
	}
}

// slotCounts accumulates one key's counts per slot while a limiter is
// collected: the slots from first to cur.
type slotCounts struct {
	first, cur int64
	n          [rateSlots]int32
}

func (c *slotCounts) add(sec int64, n int) {
	if s := sec / store.RateSlot; s >= c.first && s <= c.cur {
		c.n[s%rateSlots] += int32(n)
	}
}

// appendTo appends the counts of key's slots from c.first (zeros too: a
// refund may have emptied one) to put.
func (c *slotCounts) appendTo(put []store.RateCount, key string) []store.RateCount {
	for s := c.first; s <= c.cur; s++ {
		put = append(put, store.RateCount{Key: key, Slot: s, N: int(c.n[s%rateSlots])})
	}
	return put
}

// SyncLimits publishes this replica's request counts to a shared store
// and reads the other replicas' (see shared.go's comment); on a store of
// one process it does nothing. Run it every SyncInterval. A failure is
// returned once, when the syncs start failing; the counts are published
// again by the next sync that succeeds, and meanwhile each replica counts
// only its own requests.
func (s *Service) SyncLimits(ctx context.Context) error {
	sh := s.shared
	if sh == nil {
		return nil
	}
	now := s.now().Unix()
	cur := now / store.RateSlot
	from := cur - rateSlots + 1
	since := max(sh.synced.Load(), from)
	all := sh.pushAll.Load()
	if all {
		since = from
	}
	var put []store.RateCount
	var keys []string
	put, keys = s.limiter.collect(now, since, all, sh.keys.ns, put, keys)
	put, keys = s.adminFails.collect(now, since, all, sh.admin.ns, put, keys)
	put, keys = s.activity.collect(now, since, all, sh.sessions.ns, put, keys)
	got, err := sh.db.SyncRates(ctx, sh.replica, put, keys, from)
	if err != nil {
		sh.pushAll.Store(true)
		if sh.failing.Swap(true) {
			return nil
		}
		return err
	}
	sh.synced.Store(cur)
	sh.pushAll.Store(false)
	if sh.failing.Swap(false) {
		s.log.Info("shared rate counts are synced again")
	}
	byNS := map[string]map[string]*remote{sh.keys.ns: {}, sh.admin.ns: {}, sh.sessions.ns: {}}
	for _, c := range got {
		if len(c.Key) < 2 {
			continue
		}
		m := byNS[c.Key[:2]]
		if m == nil {
			continue
		}
		k := c.Key[2:]
		rm := m[k]
		if rm == nil {
			rm = &remote{}
			m[k] = rm
		}
		i := c.Slot % rateSlots
		rm.slot[i], rm.n[i] = c.Slot, int32(c.N)
	}
	sh.keys.replace(byNS[sh.keys.ns])
	sh.admin.replace(byNS[sh.admin.ns])
	sh.sessions.replace(byNS[sh.sessions.ns])
	return nil
}

// sweepShared deletes velocity rows and rate counts that count nothing
// any more (the minute's sweep).
func (s *Service) sweepShared(ctx context.Context, now time.Time) error {
	sh := s.shared
	if sh == nil {
		return nil
	}
	// Older than the window, the block and the hold: counts nothing.
	_, err := sh.db.SweepVelocity(ctx, now.Add(-max(RiskWindow, RiskBlockFor, velocityRule.Hold)-time.Minute))
	_, err2 := sh.db.SweepRates(ctx, now.Unix()/store.RateSlot-2*rateSlots)
	return errors.Join(err, err2)
}

// velocityKey is the store's key of a velocity count: a keyed hash of k.
func (s *Service) velocityKey(k riskKey) []byte {
	b := make([]byte, 0, len(k.project)+18+len(k.account))
	b = append(b, k.project...)
	b = append(b, 0)
	if k.ip.IsValid() {
		a := k.ip.As16()
		b = append(b, a[:]...)
	}
	b = append(b, k.kind)
	b = append(b, k.account...)
	h := s.keys.Hash(hashDomainVelocity, b)
	return h[:]
}

// reserveVelocity takes a velocity slot for k: in memory, or in the
// shared store.
func (s *Service) reserveVelocity(ctx context.Context, k riskKey) (bool, error) {
	if s.shared == nil {
		return s.risk.reserve(k), nil
	}
	return s.shared.db.ReserveVelocity(ctx, s.velocityKey(k), s.now(), velocityRule)
}

// settleVelocity ends a verification's velocity slot for k. A failure of
// the shared store is logged: the failure goes uncounted and the slot
// stops counting after the hold.
func (s *Service) settleVelocity(ctx context.Context, k riskKey, held, failed bool) {
	if s.shared == nil {
		s.risk.settle(k, held, failed)
		return
	}
	if !held && !failed {
		return
	}
	if err := s.shared.db.SettleVelocity(context.WithoutCancel(ctx), s.velocityKey(k), s.now(), held, failed, velocityRule); err != nil {
		s.log.Warn("velocity count not settled", "err", err)
	}
}
