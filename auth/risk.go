package auth

import (
	"context"
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"latchkey/store"
)

// Risk parameters: more than 30 failed verifications of one key within
// 10 minutes block it for 15 minutes (docs/security.md, "The risk
// engine").
const (
	RiskMaxFailures = 30
	RiskWindow      = 10 * time.Minute
	RiskBlockFor    = 15 * time.Minute
	riskShards      = 32
	// RiskMaxTracked bounds the tracked keys (a project and an IP or an
	// account); past it idle and single-failure keys are dropped first
	// and blocked ones last (see evict), so an attack from many
	// addresses costs bounded memory.
	RiskMaxTracked = 64 * 1024
)

// Risk counts failed verifications per key in one-minute buckets and
// blocks a key that fails too often. A key is a project and either the
// end user's IP (an IPv6 address counts as its /64, so rotating inside
// one's own network does not help) or, when the end-user IP is unknown,
// the account the request names. Checking and counting are one step: a
// verification reserves a slot before its credential is checked and
// releases it with the outcome after, so however many verifications run
// at once, no more are evaluated than one at a time would be (see
// reserve). Memory is bounded by RiskMaxTracked; each shard has its own
// lock.
type Risk struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [riskShards]riskShard
}

type riskShard struct {
	mu sync.Mutex
	m  map[riskKey]*ipState
}

// riskKey names what a velocity count is about: a project and either an
// end-user address (ip; IPv6 masked to its /64) or an account (kind and
// account: an email, external id, credential id or reference).
type riskKey struct {
	project string
	ip      netip.Addr
	kind    byte
	account string
}

// Account kinds of a riskKey.
const (
	riskByEmail      = 'e'
	riskByExternalID = 'x'
	riskByCredential = 'c'
	riskByReference  = 'r'
)

// ipKey is the key of an end-user address in project: IPv6 addresses
// count per /64.
func ipKey(project string, ip netip.Addr) riskKey {
	ip = ip.Unmap()
	if ip.Is6() {
		ip = netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return riskKey{project: project, ip: ip}
}

type ipState struct {
	minutes      [10]int64 // the unix minute each bucket counts
	counts       [10]uint16
	inflight     uint16 // verifications holding a reserved slot
	blockedUntil time.Time
	last         time.Time
}

// NewRisk returns an empty risk engine on clock now.
func NewRisk(now func() time.Time) *Risk {
	r := &Risk{now: now, seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].m = make(map[riskKey]*ipState)
	}
	return r
}

func (r *Risk) shard(k riskKey) *riskShard {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(k.project)
	b := k.ip.As16()
	h.Write(b[:])
	h.WriteByte(k.kind)
	h.WriteString(k.account)
	return &r.shards[h.Sum64()%riskShards]
}

// Blocked reports whether ip (its /64 for IPv6) is velocity-blocked in
// project.
func (r *Risk) Blocked(project string, ip netip.Addr) bool {
	k := ipKey(project, ip)
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.m[k]
	return st != nil && r.now().Before(st.blockedUntil)
}

// Fail counts one failed verification from ip (its /64 for IPv6) in
// project and blocks it when it passes RiskMaxFailures within
// RiskWindow.
func (r *Risk) Fail(project string, ip netip.Addr) {
	r.settle(ipKey(project, ip), false, true)
}

// reserve takes a slot for one verification keyed by k. It refuses while
// k is blocked, and while k's failures in the window plus the
// verifications in flight already reach RiskMaxFailures+1: the one
// failure that makes "more than RiskMaxFailures" may still be evaluated,
// as it would be one at a time, but not a second one concurrently. So
// with any concurrency at most RiskMaxFailures+1 failures are evaluated
// in a window; then the block holds. A verification that succeeds frees
// its slot without counting. Every true must be followed by
// settle(k, true, failed).
func (r *Risk) reserve(k riskKey) bool {
	now := r.now()
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.m[k]
	if st == nil {
		st = sh.add(k, now)
	}
	if now.Before(st.blockedUntil) || st.total(now.Unix()/60)+int(st.inflight) > RiskMaxFailures {
		return false
	}
	st.inflight++
	st.last = now
	return true
}

// settle ends a verification keyed by k: held releases its reserved
// slot, failed counts a failure (blocking k past RiskMaxFailures within
// RiskWindow).
func (r *Risk) settle(k riskKey, held, failed bool) {
	now := r.now()
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.m[k]
	if st == nil {
		if !failed {
			return
		}
		st = sh.add(k, now)
	}
	if held && st.inflight > 0 {
		st.inflight--
	}
	if !failed {
		return
	}
	st.last = now
	min := now.Unix() / 60
	i := min % 10
	if st.minutes[i] != min {
		st.minutes[i], st.counts[i] = min, 0
	}
	if st.counts[i] < ^uint16(0) {
		st.counts[i]++
	}
	if st.total(min) > RiskMaxFailures {
		st.blockedUntil = now.Add(RiskBlockFor)
	}
}

// add tracks a new key, evicting first when the shard is full.
func (sh *riskShard) add(k riskKey, now time.Time) *ipState {
	if len(sh.m) >= RiskMaxTracked/riskShards {
		sh.evict(now)
	}
	st := &ipState{last: now}
	sh.m[k] = st
	return st
}

// evict frees an eighth of the shard, in passes: first unblocked
// entries that are idle for longer than the window or hold a single
// failure in it (what a flood of one-shot addresses leaves), then any
// unblocked entry in the map's random order, and only when that is not
// enough, blocked ones, so the bound holds even against millions of
// blocked addresses. Keys with a verification in flight stay (their
// number is bounded by the requests in flight). An address that keeps
// failing thus survives a flood of one-shot addresses. Each pass is O(shard); amortised over the
// inserts that fill the freed space again, eviction is O(1) per insert.
func (sh *riskShard) evict(now time.Time) {
	want := len(sh.m) / 8
	min, idle := now.Unix()/60, now.Add(-RiskWindow)
	for pass := 0; pass < 3 && want > 0; pass++ {
		for k, st := range sh.m {
			if want <= 0 {
				return
			}
			blocked := now.Before(st.blockedUntil)
			if st.inflight > 0 || pass == 0 && (blocked || st.last.After(idle) && st.total(min) > 1) || pass == 1 && blocked {
				continue
			}
			delete(sh.m, k)
			want--
		}
	}
}

// total returns the failures counted in the window ending in unix minute min.
func (st *ipState) total(min int64) int {
	n := 0
	for j := range st.counts {
		if st.minutes[j] > min-10 {
			n += int(st.counts[j])
		}
	}
	return n
}

// Tracked returns how many keys are held (for tests).
func (r *Risk) Tracked() int {
	n := 0
	for i := range r.shards {
		r.shards[i].mu.Lock()
		n += len(r.shards[i].m)
		r.shards[i].mu.Unlock()
	}
	return n
}

// Sweep drops entries idle for longer than the window and not blocked.
func (r *Risk) Sweep() {
	now := r.now()
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for k, st := range sh.m {
			if now.Sub(st.last) > RiskWindow && !now.Before(st.blockedUntil) && st.inflight == 0 {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// checkRisk refuses a send or a ceremony start from an address on the
// project's deny list (403 RISK_BLOCKED). Verifications reserve a
// velocity slot instead (reserveRisk), which applies the deny list too.
func (s *Service) checkRisk(p *store.Project, m Meta) error {
	ip, err := netip.ParseAddr(m.IP)
	if err != nil {
		return nil
	}
	if denied(p, ip.Unmap()) {
		return ErrRiskBlocked
	}
	return nil
}

func denied(p *store.Project, ip netip.Addr) bool {
	// A zone (fe80::1%eth0) would make every prefix miss the address.
	ip = ip.WithZone("")
	for _, c := range p.DenyCIDRs {
		if pfx, err := netip.ParsePrefix(c); err == nil && pfx.Contains(ip) {
			return true
		}
	}
	return false
}

// subject is what a verification names before any credential is
// checked: the user (email or external id) or, lacking one, the
// credential or reference it presents.
type subject struct{ email, externalID, credential, reference string }

// riskSlot is one verification's place in the velocity count, taken by
// reserveRisk before the credential is checked and settled (releaseRisk)
// after. The attempt holding it marks it failed when the verification's
// failure event commits (attempt.record).
type riskSlot struct {
	key    riskKey
	held   bool // holds an in-flight slot (false: a device-exempt request)
	failed bool // set on the goroutine that commits, read after the commit returns
}

// reserveRisk is the risk check of a verification (docs/security.md,
// "The risk engine"): 403 RISK_BLOCKED from an address on the project's
// deny list, or
// when the velocity key is blocked or its slots are taken (see
// Risk.reserve). The key is the end-user IP when it is known
// (m.EndUserIP); otherwise the account who names, so one app backend
// calling without X-End-User-IP cannot block a whole project. A request
// that names no account and comes without a known IP is neither counted
// nor blocked (nil slot). A device token bound to who's user (a known
// device) passes a velocity refusal, its failures still counted. Use cases
// take it through their attempt (attempt.reserveRisk), which settles it
// with releaseRisk once the outcome is committed.
func (s *Service) reserveRisk(ctx context.Context, p *store.Project, m Meta, who subject) (*riskSlot, error) {
	ip, ipErr := netip.ParseAddr(m.IP)
	if ipErr == nil {
		ip = ip.Unmap()
		if denied(p, ip) {
			return nil, ErrRiskBlocked
		}
	}
	var k riskKey
	switch {
	case m.EndUserIP && ipErr == nil:
		k = ipKey(p.ID, ip)
	case who.email != "":
		k = riskKey{project: p.ID, kind: riskByEmail, account: who.email}
	case who.externalID != "":
		k = riskKey{project: p.ID, kind: riskByExternalID, account: who.externalID}
	case who.credential != "":
		k = riskKey{project: p.ID, kind: riskByCredential, account: who.credential}
	case who.reference != "":
		k = riskKey{project: p.ID, kind: riskByReference, account: who.reference}
	default:
		return nil, nil
	}
	slot := &riskSlot{key: k}
	ok, err := s.reserveVelocity(ctx, k)
	if err != nil {
		return nil, internal(err)
	}
	if ok {
		slot.held = true
		return slot, nil
	}
	if s.knownDevice(ctx, p.ID, m.DeviceToken, who) {
		return slot, nil
	}
	return nil, ErrRiskBlocked
}

// releaseRisk settles a slot from reserveRisk (nil is a no-op): frees it
// and counts the failure record marked on it.
func (s *Service) releaseRisk(ctx context.Context, slot *riskSlot) {
	if slot != nil {
		s.settleVelocity(ctx, slot.key, slot.held, slot.failed)
	}
}

// knownDevice reports whether token is a device token bound to who, a
// user of project.
func (s *Service) knownDevice(ctx context.Context, projectID, token string, who subject) bool {
	if token == "" || (who.email == "" && who.externalID == "") {
		return false
	}
	known := false
	s.db.View(ctx, func(tx store.Tx) error {
		d, ok := s.device(tx, token)
		if !ok || d.ProjectID != projectID {
			return nil
		}
		u, err := tx.User(d.UserID)
		if err != nil {
			return nil
		}
		known = (who.email != "" && u.Email == who.email) || (who.externalID != "" && u.ExternalUserID == who.externalID)
		return nil
	})
	return known
}

// isVerifyFailure reports whether a failure is a wrong guess that counts
// towards the velocity block: a wrong, expired, used or locked code,
// token or credential, an unknown user, or a bad external signature.
// Malformed requests and configuration errors (INVALID_PAYLOAD,
// WRONG_PATTERN, INACTIVE_REGISTRATION, STALE_TIMESTAMP, REPLAYED) are
// not guesses at a credential and do not count.
func isVerifyFailure(e *Error) bool {
	switch e.Category {
	case CatInvalidCode, CatExpired, CatAlreadyUsed, CatRateLimited, CatUserNotFound:
		return true
	case CatExternalMethod:
		return e.Code == ErrInvalidSignature.Code
	}
	return false
}
