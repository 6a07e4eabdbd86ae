// Load: many rows written straight through the store, for benchmarks.

package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"

	"latchkey/store"
)

// Growth says what Load writes. Times are spread evenly over their
// windows, ending at Now.
type Growth struct {
	// Now is the end of every window (default time.Now()).
	Now time.Time
	// ProjectID receives the users, sessions and devices; EventProjects
	// the events (45% to the first, 5% without a project, the rest
	// spread over the others; default: ProjectID alone).
	ProjectID     string
	EventProjects []string
	// Users are signed up over the last 90 days; each has one live
	// session (issued within the last day, expiring within the next, at
	// the project's default lifetime of 24 hours) when Sessions is set,
	// and one remembered device (last used within the last 90 days) when
	// Devices is set.
	Users    int
	Sessions bool
	Devices  bool
	// Events are spread over the last 30 days plus EventsOverdue, so
	// that much of them is older than the retention when the load ends.
	Events        int
	EventsOverdue time.Duration
	// Chunk is the rows per transaction (default 100,000).
	Chunk int
	// Progress, when set, is told after each transaction.
	Progress func(what string, done, total int)
}

// userAgent is a browser's: 118 bytes, as real sign-ins store.
const userAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"

// Email returns the address of loaded user i: a hash first, so that
// addresses arrive in random order, as sign-ups do.
func Email(i int) string {
	h := fnv.New32a()
	fmt.Fprint(h, i)
	return fmt.Sprintf("%08x.user%d@example.com", h.Sum32(), i)
}

// Load writes g's rows into db and returns the ids of the sessions it
// wrote, in user order (nil without Sessions).
func Load(db store.DB, g Growth) (sessions []string, err error) {
	if g.Now.IsZero() {
		g.Now = time.Now()
	}
	g.Now = g.Now.UTC()
	if g.Chunk <= 0 {
		g.Chunk = 100_000
	}
	if len(g.EventProjects) == 0 {
		g.EventProjects = []string{g.ProjectID}
	}
	const day = 24 * time.Hour
	userIDs := make([]string, g.Users)
	for i := 0; i < g.Users; i += g.Chunk {
		end := min(i+g.Chunk, g.Users)
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for j := i; j < end; j++ {
				created := g.Now.Add(-90 * day).Add(time.Duration(float64(j) / float64(g.Users) * float64(90*day)))
				u := &store.User{ID: v7At(created), ProjectID: g.ProjectID, Email: Email(j), CreatedAt: created, UpdatedAt: created}
				verified := true
				u.EmailVerified = &verified
				if err := tx.PutUser(u); err != nil {
					return err
				}
				userIDs[j] = u.ID
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if g.Progress != nil {
			g.Progress("users", end, g.Users)
		}
	}
	// Sessions and devices are written in the order they were made, as
	// sign-ins make them (their ids are time-ordered), each for a user
	// picked by a permutation: users sign in in no particular order.
	if g.Sessions {
		sessions = make([]string, 0, g.Users)
	}
	for _, what := range []string{"sessions", "devices"} {
		if (what == "sessions" && !g.Sessions) || (what == "devices" && !g.Devices) {
			continue
		}
		window := day // sessions: issued within the last day, for a day
		if what == "devices" {
			window = 90 * day // devices: last used within the last 90 days
		}
		for i := 0; i < g.Users; i += g.Chunk {
			end := min(i+g.Chunk, g.Users)
			err := db.Update(context.Background(), func(tx store.Tx) error {
				for k := i; k < end; k++ {
					at := g.Now.Add(-window).Add(time.Duration(float64(k) / float64(g.Users) * float64(window))).Truncate(time.Second)
					j := permute(k, g.Users)
					if what == "sessions" {
						s := &store.Session{ID: v7At(at), UserID: userIDs[j], ProjectID: g.ProjectID, Method: "email_otp",
							IssuedAt: at, ExpiresAt: at.Add(day), IP: fmt.Sprintf("198.51.%d.%d", j>>8&255, j&255), UserAgent: userAgent}
						if err := tx.PutSession(s); err != nil {
							return err
						}
						sessions = append(sessions, s.ID)
						continue
					}
					key := uuid.MustParse(v7At(at))
					hash := make([]byte, 32)
					rand.Read(hash)
					d := &store.Device{Key: key[:], Hash: hash, UserID: userIDs[j], ProjectID: g.ProjectID, CreatedAt: at, LastUsedAt: at}
					if err := tx.PutDevice(d); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if g.Progress != nil {
				g.Progress(what, end, g.Users)
			}
		}
	}
	span := 30*day + g.EventsOverdue
	first := g.Now.Add(-span)
	for i := 0; i < g.Events; i += g.Chunk {
		end := min(i+g.Chunk, g.Events)
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for j := i; j < end; j++ {
				e := &store.AuthEvent{ID: uuid.NewString(), UserID: uuid.NewString(), Email: Email(j % max(g.Users, 1)),
					Method: "email_otp", Action: []string{"send", "verify"}[j%2], IP: fmt.Sprintf("203.0.%d.%d", j>>8&255, j&255),
					UserAgent: userAgent, CreatedAt: first.Add(time.Duration(int64(span) / int64(g.Events) * int64(j)))}
				ps := g.EventProjects
				switch k := j % 20; {
				case len(ps) == 1 || k < 9:
					e.ProjectID = ps[0]
				case k == 9:
					e.ProjectID, e.UserID = "", ""
				default:
					e.ProjectID = ps[1+(k-10)%(len(ps)-1)]
				}
				if j%10 < 7 {
					e.Success = true
				} else {
					e.FailureCode = []string{"invalid_code", "expired", "rate_limited"}[j%3]
				}
				if err := tx.AddAuthEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if g.Progress != nil {
			g.Progress("events", end, g.Events)
		}
	}
	return sessions, nil
}

// v7At returns a time-ordered UUID (version 7) made at t, as latchkey's
// ids are: t's Unix milliseconds, then random bits.
func v7At(t time.Time) string {
	var u uuid.UUID
	rand.Read(u[:])
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u.String()
}

// permute maps k in [0, n) to a user index, a different one for each k:
// a multiplication modulo n by a prime that shares no factor with n.
func permute(k, n int) int {
	const prime = 1_000_003
	a, b := prime, n
	for b != 0 {
		a, b = b, a%b
	}
	if a != 1 {
		return k
	}
	return int(uint64(k) * prime % uint64(n))
}
