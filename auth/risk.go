package auth

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"latchkey/store"
)

// Risk parameters (decisions.md §12).
const (
	RiskMaxFailures = 30
	RiskWindow      = 10 * time.Minute
	RiskBlockFor    = 15 * time.Minute
	riskShards      = 32
	// RiskMaxTracked bounds the tracked (project, IP) pairs; past it idle
	// and single-failure pairs are dropped first and blocked ones last
	// (see evict), so an attack from many addresses costs bounded memory.
	RiskMaxTracked = 64 * 1024
)

// Risk counts failed verifications per (project, end-user IP) in
// one-minute buckets and blocks an IP that fails too often. Memory is
// bounded by RiskMaxTracked; each shard has its own lock.
type Risk struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [riskShards]riskShard
}

type riskShard struct {
	mu sync.Mutex
	m  map[riskKey]*ipState
}

type riskKey struct {
	project string
	ip      netip.Addr
}

type ipState struct {
	minutes      [10]int64 // the unix minute each bucket counts
	counts       [10]uint16
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
	return &r.shards[h.Sum64()%riskShards]
}

// Blocked reports whether ip is velocity-blocked in project.
func (r *Risk) Blocked(project string, ip netip.Addr) bool {
	k := riskKey{project, ip}
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.m[k]
	return st != nil && r.now().Before(st.blockedUntil)
}

// Fail counts one failed verification from ip in project and blocks the
// IP when it passes RiskMaxFailures within RiskWindow.
func (r *Risk) Fail(project string, ip netip.Addr) {
	now := r.now()
	k := riskKey{project, ip}
	sh := r.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.m[k]
	if st == nil {
		if len(sh.m) >= RiskMaxTracked/riskShards {
			sh.evict(now)
		}
		st = &ipState{}
		sh.m[k] = st
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

// evict frees an eighth of the shard, in passes: first unblocked
// entries that are idle for longer than the window or hold a single
// failure in it (what a flood of one-shot addresses leaves), then any
// unblocked entry in the map's random order, and only when that is not
// enough, blocked ones, so the bound holds even against millions of
// blocked addresses. An address that keeps failing thus survives a flood
// of one-shot addresses. Each pass is O(shard); amortised over the
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
			if pass == 0 && (blocked || st.last.After(idle) && st.total(min) > 1) || pass == 1 && blocked {
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

// Tracked returns how many (project, IP) pairs are held (for tests).
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
			if now.Sub(st.last) > RiskWindow && !now.Before(st.blockedUntil) {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// checkRisk refuses a login attempt from an IP on the project's deny list
// or, for verifications, velocity-blocked (403 RISK_BLOCKED). No device
// token exempts it: the request names no user up front (checkRiskFor).
func (s *Service) checkRisk(p *store.Project, m Meta, verify bool) error {
	return s.checkRiskFor(p, m, verify, subject{})
}

// subject is the user a verification is for, as its request names it
// before any credential is checked.
type subject struct{ email, externalID string }

// checkRiskFor is checkRisk for a request naming its user: a device token
// (decisions §5: bound to the user) exempts it from the velocity block
// only when it is bound to that very user, so one account's device token
// cannot lift the block for guesses at every other account.
func (s *Service) checkRiskFor(p *store.Project, m Meta, verify bool, who subject) error {
	ip, err := netip.ParseAddr(m.IP)
	if err != nil {
		return nil
	}
	ip = ip.Unmap()
	for _, c := range p.DenyCIDRs {
		if pfx, err := netip.ParsePrefix(c); err == nil && pfx.Contains(ip) {
			return ErrRiskBlocked
		}
	}
	if verify && s.risk.Blocked(p.ID, ip) && !s.knownDevice(p.ID, m.DeviceToken, who) {
		return ErrRiskBlocked
	}
	return nil
}

// knownDevice reports whether token is a device token bound to who, a
// user of project.
func (s *Service) knownDevice(projectID, token string, who subject) bool {
	if token == "" || (who.email == "" && who.externalID == "") {
		return false
	}
	known := false
	s.db.View(func(tx *store.Tx) error {
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

// countFailure feeds a failed verification to the risk engine.
func (s *Service) countFailure(projectID, ip string) {
	a, err := netip.ParseAddr(ip)
	if err != nil || projectID == "" {
		return
	}
	s.risk.Fail(projectID, a.Unmap())
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
