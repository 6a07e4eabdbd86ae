package httpapi

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"latchkey/auth"
	"latchkey/store"
)

// Scale of BenchmarkScale: the growth targets of the product (a million
// users and two million events on one small VM).
const (
	scaleUsers    = 1_000_000
	scaleEvents   = 2_000_000
	scaleProjects = 10
	scaleChunk    = 100_000 // rows per loading transaction
)

// BenchmarkScale loads scaleUsers users and scaleEvents events (30 days,
// ten projects and events without a project, the usual outcomes) directly
// through the store in large transactions, then measures, one request at a
// time over real HTTP, every events query and dashboard page, and admin
// user pages at several depths. Targets: events queries and dashboard
// pages under 50 ms, user pages under 20 ms at any depth.
//
// It takes a few minutes and about 1.5 GB of disk, so it runs only when
// asked for:
//
//	LATCHKEY_BENCH_SCALE=1 go test -run XXX -bench Scale -benchtime 200x -timeout 30m ./httpapi/
func BenchmarkScale(b *testing.B) {
	if os.Getenv("LATCHKEY_BENCH_SCALE") == "" {
		b.Skip("set LATCHKEY_BENCH_SCALE=1 to load a million users and two million events")
	}
	e := newBenchEnv(b)
	projects := []string{e.project.ID}
	for i := 1; i < scaleProjects; i++ {
		name := fmt.Sprint("p", i)
		p, err := e.svc.CreateProject(ctx, auth.ProjectInput{Name: &name})
		if err != nil {
			b.Fatal(err)
		}
		projects = append(projects, p.ID)
	}
	// Events first, into a nearly empty file, so that the growth is theirs
	// (a later load reuses pages the earlier one freed).
	before, start := dataSize(e.db), time.Now()
	cursors := loadEvents(b, e.db, projects)
	b.Logf("loaded %d events in %v; %.0f bytes of file per event (record, index, counters)",
		scaleEvents, time.Since(start).Round(time.Second), float64(dataSize(e.db)-before)/scaleEvents)
	start = time.Now()
	emails := loadUsers(b, e.db, e.project.ID)
	b.Logf("loaded %d users in %v; file %d MB", scaleUsers, time.Since(start).Round(time.Second), dataSize(e.db)>>20)

	sid, err := e.svc.StartDashSession(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cookie := &http.Cookie{Name: dashCookie, Value: sid}
	admin := "adm_benchbenchbenchbenchbench"
	userCursor := func(depth int) string { return base64.RawURLEncoding.EncodeToString([]byte(emails[depth-1])) }
	nobody := uuid.NewString()
	cases := []struct {
		name, path string
		dash       bool
	}{
		{"events/newest", "/api/v1/admin/events", false},
		{"events/newest-1000", "/api/v1/admin/events?limit=1000", false},
		{"events/deep-page", "/api/v1/admin/events?before=" + cursors.deep, false},
		{"events/project", "/api/v1/admin/events?projectId=" + projects[3], false},
		{"events/project-failure", "/api/v1/admin/events?projectId=" + projects[0] + "&failureCode=invalid_code", false},
		{"events/failure-every-project", "/api/v1/admin/events?failureCode=expired", false},
		{"events/no-match-project", "/api/v1/admin/events?projectId=" + nobody, false},
		{"events/no-match-failure", "/api/v1/admin/events?projectId=" + projects[3] + "&failureCode=user_disabled", false},
		{"events/no-match-anywhere", "/api/v1/admin/events?failureCode=risk_blocked", false},
		{"dashboard/projects", "/admin/", true},
		{"dashboard/events", "/admin/events", true},
		{"dashboard/events-project-failure", "/admin/events?project=" + projects[0] + "&failure=invalid_code", true},
		{"dashboard/events-older", "/admin/events?before=" + cursors.deep, true},
		{"dashboard/project-users", "/admin/projects/" + projects[0], true},
		{"dashboard/project-users-deep", "/admin/projects/" + projects[0] + "?cursor=" + userCursor(scaleUsers-50), true},
		{"users/first", "/api/v1/admin/users?projectId=" + projects[0], false},
		{"users/depth-500k", "/api/v1/admin/users?projectId=" + projects[0] + "&cursor=" + userCursor(500_000), false},
		{"users/depth-999k", "/api/v1/admin/users?projectId=" + projects[0] + "&cursor=" + userCursor(999_000), false},
		{"users/depth-500k-limit-1000", "/api/v1/admin/users?projectId=" + projects[0] + "&limit=1000&cursor=" + userCursor(500_000), false},
		{"users/email-prefix", "/api/v1/admin/users?projectId=" + projects[0] + "&email=7f", false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			var bytes int64
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest("GET", e.url+c.path, nil)
				if c.dash {
					req.AddCookie(cookie)
				} else {
					req.Header.Set("Authorization", "Bearer "+admin)
				}
				t := time.Now()
				res, err := e.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat = append(lat, time.Since(t))
				if res.StatusCode != 200 {
					b.Fatalf("GET %s: %d", c.path, res.StatusCode)
				}
				bytes = n
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(bytes), "resp-bytes")
		})
	}
}

// dataSize returns the size of the data file under db (0 on a backend
// without one).
func dataSize(db store.DB) int64 {
	if f, ok := db.(store.File); ok {
		return f.Space().FileSize
	}
	return 0
}

// loadUsers stores scaleUsers users of project in email order of random
// addresses (as sign-ups arrive), and returns their addresses sorted.
func loadUsers(b *testing.B, db store.DB, project string) []string {
	b.Helper()
	emails := make([]string, 0, scaleUsers)
	now := time.Now().UTC()
	for i := 0; i < scaleUsers; i += scaleChunk {
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := i; j < i+scaleChunk; j++ {
				h := fnv.New32a()
				fmt.Fprint(h, j)
				u := &store.User{ID: uuid.NewString(), ProjectID: project, Email: fmt.Sprintf("%08x.user%d@example.com", h.Sum32(), j),
					CreatedAt: now, UpdatedAt: now}
				emails = append(emails, u.Email)
				if err := tx.PutUser(u); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(emails)
	return emails
}

type scaleCursors struct{ deep string }

// loadEvents stores scaleEvents events over the last 30 days: 45% of them
// in the first project, 5% without a project, the rest spread over the
// others; 70% successes, the failures invalid_code, expired or
// rate_limited; plus suppressed counters for every hour. It returns the
// cursor of an event in the middle of the month.
func loadEvents(b *testing.B, db store.DB, projects []string) scaleCursors {
	b.Helper()
	now := time.Now().UTC()
	span := 29 * 24 * time.Hour
	first := now.Add(-span)
	var cur scaleCursors
	const ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"
	for i := 0; i < scaleEvents; i += scaleChunk {
		err := db.Update(ctx, func(tx store.Tx) error {
			for j := i; j < i+scaleChunk; j++ {
				e := &store.AuthEvent{ID: uuid.NewString(), UserID: uuid.NewString(), Email: fmt.Sprintf("user%d@example.com", j%scaleUsers),
					Method: "email_otp", Action: []string{"send", "verify"}[j%2], IP: fmt.Sprintf("203.0.%d.%d", j>>8&255, j&255),
					UserAgent: ua, CreatedAt: first.Add(time.Duration(int64(span) / scaleEvents * int64(j)))}
				switch k := j % 20; {
				case k < 9:
					e.ProjectID = projects[0]
				case k == 9:
					e.ProjectID, e.UserID = "", ""
				default:
					e.ProjectID = projects[1+(k-10)%(len(projects)-1)]
				}
				if j%10 < 7 {
					e.Success = true
				} else {
					e.FailureCode = []string{auth.CatInvalidCode, auth.CatExpired, auth.CatRateLimited}[j%3]
				}
				if err := tx.AddAuthEvent(e); err != nil {
					return err
				}
				if j == scaleEvents/2 {
					cur.deep = url.QueryEscape(e.Pos.String())
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	err := db.Update(ctx, func(tx store.Tx) error {
		for h := first.Truncate(time.Hour); h.Before(now); h = h.Add(time.Hour) {
			for _, p := range []string{projects[0], ""} {
				c := store.SuppressedCount{Hour: h, ProjectID: p, Method: "magic_link", Action: "verify", FailureCode: auth.CatInvalidCode, N: 500}
				if err := tx.AddSuppressed(c); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return cur
}
