package background

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
)

// Default lease timing (a dead replica's lease is taken over within 30
// seconds: docs/replicas.md, "Background work and leases"). A lease lasts DefaultLeaseTTL from its last
// renewal, renewed every third of it; another replica tries as often, so
// it takes a dead holder's lease at most TTL + TTL/3 = 20 s after the
// holder's last renewal.
const DefaultLeaseTTL = 15 * time.Second

// LeaseStore takes leases: store.DB.Lease (acquire or renew for ttl, or
// release with a ttl of 0).
type LeaseStore interface {
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error)
}

// Leases keeps a replica's leases on its background tasks, so that each
// task runs on one replica at a time among those sharing a store: Start
// tries to acquire every added lease, then renews those it holds and
// tries the others again every Renew; a task runs while Held says so
// (Task.Hold), and is woken when its lease is acquired after the start
// (taking over a dead replica's work at once). A lease counts as held
// until TTL after the start of its last successful renewal, by Clock: the
// store's own expiry (on the database's clock) is no earlier, so two
// replicas never both count one lease as held, whatever their clocks
// say. On a bbolt file every lease is always held.
//
// Set the fields, Add the leases, then Start; Held and Gate are safe for
// concurrent use.
type Leases struct {
	// Store takes the leases.
	Store LeaseStore
	// Holder names this replica in the store's leases; default
	// HolderName().
	Holder string
	// TTL is how long a lease lasts from its last renewal (default
	// DefaultLeaseTTL); Renew how often leases are renewed or tried
	// (default TTL/3).
	TTL, Renew time.Duration
	// Clock measures the leases' validity: real elapsed time, never a
	// test's fake calendar (default time.Now).
	Clock func() time.Time
	// Logger receives acquisitions and losses (default slog.Default()),
	// and the store's errors unless Quiet says so.
	Logger *slog.Logger
	Quiet  func(error) bool

	mu      sync.Mutex
	names   []string
	leases  map[string]*lease
	started bool
	task    Task
}

type lease struct {
	until     time.Time // held until then (Clock); zero: not held
	onAcquire []func()
}

// HolderName returns a name for this process in leases: host, process id
// and a random part, so that a restarted process is a new holder.
func HolderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b)
}

func (l *Leases) init() {
	if l.leases == nil {
		l.leases = map[string]*lease{}
	}
	if l.Holder == "" {
		l.Holder = HolderName()
	}
	if l.TTL <= 0 {
		l.TTL = DefaultLeaseTTL
	}
	if l.Renew <= 0 {
		l.Renew = l.TTL / 3
	}
	if l.Clock == nil {
		l.Clock = time.Now
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
}

// Add declares lease name; onAcquire, when not nil, is called (on the
// renewing goroutine: it must not block) each time this replica acquires
// the lease after the first round of Start. Call it before Start.
func (l *Leases) Add(name string, onAcquire func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	ls := l.leases[name]
	if ls == nil {
		ls = &lease{}
		l.leases[name] = ls
		l.names = append(l.names, name)
	}
	if onAcquire != nil {
		ls.onAcquire = append(ls.onAcquire, onAcquire)
	}
}

// Held reports whether this replica holds lease name now.
func (l *Leases) Held(name string) bool { return l.held(name, false) }

// held reports whether this replica holds lease name now, or, when
// firm, with at least half its TTL left (Firm).
func (l *Leases) held(name string, firm bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.leases[name]
	var left time.Duration
	if firm {
		left = l.TTL / 2
	}
	return ls != nil && l.Clock().Add(left).Before(ls.until)
}

// Firm returns a function reporting whether this replica holds lease
// name with at least half its TTL left: long enough that a transaction
// begun now ends before another replica can take the lease (a holder
// renews every third of the TTL, so it stays firm while it is healthy).
func (l *Leases) Firm(name string) func() bool {
	return func() bool { return l.held(name, true) }
}

// Gate returns a function reporting whether this replica holds lease
// name (Task.Hold and the components' Hold fields).
func (l *Leases) Gate(name string) func() bool {
	return func() bool { return l.Held(name) }
}

// RunOnce acquires or renews every lease once. A lease the store refuses
// is no longer held; one the store could not be asked about stays held
// until its time runs out. It returns the last store error.
func (l *Leases) RunOnce(ctx context.Context) error {
	l.mu.Lock()
	l.init()
	names := append([]string(nil), l.names...)
	wake := l.started
	l.mu.Unlock()
	var last error
	for _, name := range names {
		start := l.Clock()
		held, err := l.Store.Lease(ctx, name, l.Holder, l.TTL)
		if err != nil {
			last = err
			continue
		}
		l.mu.Lock()
		ls := l.leases[name]
		was := start.Before(ls.until)
		if held {
			ls.until = start.Add(l.TTL)
		} else {
			ls.until = time.Time{}
		}
		calls := ls.onAcquire
		l.mu.Unlock()
		switch {
		case held && !was && !wake:
			l.Logger.Debug("lease acquired at start", "lease", name, "holder", l.Holder)
		case held && !was:
			l.Logger.Info("lease acquired: this replica runs the task", "lease", name, "holder", l.Holder)
			for _, fn := range calls {
				fn()
			}
		case !held && was:
			l.Logger.Warn("lease lost: another replica runs the task", "lease", name, "holder", l.Holder)
		}
	}
	return last
}

// Start runs a first round (so that tasks started next see the leases
// this replica holds, without being woken for them), then renews every
// Renew until Close.
func (l *Leases) Start(ctx context.Context) error {
	err := l.RunOnce(ctx)
	l.mu.Lock()
	l.init()
	l.started = true
	l.task.Name, l.task.Interval, l.task.Logger = "leases", l.Renew, l.Logger
	l.task.Run, l.task.Quiet = l.RunOnce, l.Quiet
	l.mu.Unlock()
	l.task.Start()
	return err
}

// Close stops the renewals and releases the leases this replica holds,
// so that another replica takes them at once.
func (l *Leases) Close() {
	l.task.Close()
	l.mu.Lock()
	var held []string
	for _, name := range l.names {
		if ls := l.leases[name]; l.Clock().Before(ls.until) {
			held = append(held, name)
			ls.until = time.Time{}
		}
	}
	l.mu.Unlock()
	if len(held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, name := range held {
		if _, err := l.Store.Lease(ctx, name, l.Holder, 0); err != nil {
			l.Logger.Warn("release lease", "lease", name, "err", err)
		}
	}
}
