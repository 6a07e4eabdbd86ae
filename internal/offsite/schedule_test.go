package offsite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/internal/offsite"
	"latchkey/internal/offsite/offsitetest"
	"latchkey/internal/testkit"
)

var ctx = context.Background()

// t0 is the tests' start: a time whose backup name is easy to read.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a Backups on a fresh server and bucket, whose copies are
// the bytes data returns at the time of the copy.
type fixture struct {
	srv    *offsitetest.Server
	clock  *testkit.Clock
	b      *offsite.Backups
	copies int
	data   func(n int) []byte
}

func newFixture(t *testing.T, prefix string, keep int) *fixture {
	t.Helper()
	f := &fixture{srv: offsitetest.Start(t, "latchkey-backups"), clock: testkit.NewClock(t0)}
	f.data = func(n int) []byte { return []byte(fmt.Sprintf("copy %d of the data file", n)) }
	f.b = f.backups(t, prefix, keep)
	return f
}

// backups returns another Backups on the fixture's bucket (a restart).
func (f *fixture) backups(t *testing.T, prefix string, keep int) *offsite.Backups {
	t.Helper()
	return &offsite.Backups{Bucket: f.dial(t, prefix, offsite.Options{MaxRetries: 1}), Every: 6 * time.Hour, Keep: keep,
		Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler),
		Backup: func(_ context.Context, w io.Writer, before func(int64)) (int64, error) {
			f.copies++
			b := f.data(f.copies)
			before(int64(len(b)))
			n, err := w.Write(b)
			return int64(n), err
		}}
}

// dial returns the fixture's bucket under prefix, with options o.
func (f *fixture) dial(t *testing.T, prefix string, o offsite.Options) *offsite.Bucket {
	t.Helper()
	tg, err := offsite.ParseURL(f.srv.URL("latchkey-backups", prefix))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := offsite.CredentialsFromEnv(offsitetest.Env)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := offsite.Dial(tg, cred, o)
	if err != nil {
		t.Fatal(err)
	}
	return bucket
}

// names lists the backups' names in the bucket (through the S3 API),
// oldest first.
func names(t *testing.T, b *offsite.Backups) []string {
	t.Helper()
	list, err := b.Bucket.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list {
		out = append(out, o.Name)
	}
	slices.Reverse(out)
	return out
}

// TestBackupsSchedule: the first round uploads at once (the bucket holds
// none), with the store's bytes, named by the clock's time; rounds
// before Every has passed upload nothing; each due round uploads one
// more, and once there are more than Keep the oldest go, while objects
// under the prefix that are not latchkey's backups stay.
func TestBackupsSchedule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "prod/latchkey", 3)
	f.srv.Put(t, "latchkey-backups", "prod/latchkey/notes.txt", []byte("keep me"))
	f.srv.Put(t, "latchkey-backups", "prod/latchkey/latchkey-manual.db", []byte("keep me too"))
	f.srv.Put(t, "latchkey-backups", "prod/latchkey-20200101T000000Z.db", []byte("not under the prefix"))

	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.srv.Object(t, "latchkey-backups", "prod/latchkey/latchkey-20260301T120000Z.db"); string(got) != "copy 1 of the data file" {
		t.Fatalf("uploaded %q", got)
	}
	st := f.b.Status()
	if !st.LastSuccess.Equal(t0) || st.LastName != "latchkey-20260301T120000Z.db" || st.LastSize != 23 || st.Uploads != 1 || st.Failing != 0 {
		t.Fatalf("status %+v", st)
	}
	for _, d := range []time.Duration{time.Minute, 5*time.Hour + 58*time.Minute} {
		f.clock.Advance(d)
		if err := f.b.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if f.copies != 1 {
		t.Fatalf("%d copies before six hours passed, want 1", f.copies)
	}
	for i := range 4 {
		f.clock.Set(t0.Add(time.Duration(i+1) * 6 * time.Hour)) // due at six hours exactly
		if err := f.b.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"latchkey-20260302T000000Z.db", "latchkey-20260302T060000Z.db", "latchkey-20260302T120000Z.db"}
	if got := names(t, f.b); !slices.Equal(got, want) || f.copies != 5 {
		t.Fatalf("backups %v after %d copies, want the newest 3: %v", got, f.copies, want)
	}
	keys := f.srv.Keys(t, "latchkey-backups", "prod/")
	for _, k := range []string{"prod/latchkey/notes.txt", "prod/latchkey/latchkey-manual.db", "prod/latchkey-20200101T000000Z.db"} {
		if !slices.Contains(keys, k) {
			t.Errorf("%s was deleted: %v", k, keys)
		}
	}
	if st := f.b.Status(); st.Uploads != 5 || st.LastName != want[2] {
		t.Fatalf("status %+v", st)
	}

	// After a restart the first round lists the bucket: the newest backup
	// is an hour old, so nothing is uploaded until it is six.
	f.clock.Advance(time.Hour)
	again := f.backups(t, "prod/latchkey", 3)
	if err := again.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if st := again.Status(); f.copies != 5 || st.LastName != want[2] || st.LastSize != 23 || st.Uploads != 0 {
		t.Fatalf("after a restart: %d copies, status %+v; want none and the bucket's newest", f.copies, st)
	}
	f.clock.Advance(5 * time.Hour)
	if err := again.RunOnce(ctx); err != nil || f.copies != 6 {
		t.Fatalf("six hours after the newest: %d copies, %v", f.copies, err)
	}
}

// TestBackupsStreamLarge: a copy larger than one part goes up in parts
// (a multipart upload; parts of 5 MiB here rather than 16 to keep the
// test short) and arrives whole; Keep 0 deletes nothing.
func TestBackupsStreamLarge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", 0)
	var err error
	tg, _ := offsite.ParseURL(f.srv.URL("latchkey-backups", ""))
	cred, _ := offsite.CredentialsFromEnv(offsitetest.Env)
	if f.b.Bucket, err = offsite.Dial(tg, cred, offsite.Options{MaxRetries: 1, PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (5<<20+64<<10)/16) // 5 MiB and 64 KiB: two parts of 5 MiB at most
	big[len(big)-1] = '!'
	f.data = func(int) []byte { return big }
	for range 2 {
		if err := f.b.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(7 * time.Hour)
	}
	got := f.srv.Object(t, "latchkey-backups", "latchkey-20260301T120000Z.db")
	if !bytes.Equal(got, big) {
		t.Fatalf("uploaded %d bytes, want the %d of the copy", len(got), len(big))
	}
	if n := names(t, f.b); len(n) != 2 {
		t.Fatalf("backups %v, want both (Keep 0)", n)
	}
}

// TestBackupsRefused: a bucket that refuses writes, or cannot be
// reached, fails the round: the older backups stay, the status counts
// the failures and Degraded says so (without the bucket's name); each
// later round tries again at once, and the first that succeeds clears
// it. A deletion that fails is tried again without another upload.
func TestBackupsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "p", 2)
	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if f.b.Degraded() != nil {
		t.Fatal("degraded after a success")
	}
	before := names(t, f.b)

	f.clock.Advance(6 * time.Hour)
	f.srv.Refuse("PUT", "POST", "DELETE")
	err := f.b.RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "Access Denied (AccessDenied)") || !strings.Contains(err.Error(), "s3://latchkey-backups/p/") {
		t.Fatalf("err = %v, want the server's refusal naming the target", err)
	}
	f.clock.Advance(time.Minute)
	f.srv.Refuse()
	f.srv.SetDown(true)
	if err := f.b.RunOnce(ctx); err == nil {
		t.Fatal("a round with the server down succeeded")
	}
	st := f.b.Status()
	if st.Failing != 2 || st.Failures != 2 || st.LastError == "" || !st.LastFailure.Equal(t0.Add(6*time.Hour+time.Minute)) {
		t.Fatalf("status %+v", st)
	}
	d := f.b.Degraded()
	if d == nil || d.Error() != "the last 2 attempts failed and the newest backup is from 2026-03-01T12:00:00Z (the log has the details; tried again every minute)" {
		t.Fatalf("Degraded() = %v", d)
	}
	if strings.Contains(d.Error(), "latchkey-backups") {
		t.Fatal("Degraded names the bucket")
	}
	f.srv.SetDown(false)
	if got := names(t, f.b); !slices.Equal(got, before) {
		t.Fatalf("backups %v after failed rounds, want %v", got, before)
	}

	// The next round uploads at once (the last one failed), not six
	// hours later.
	f.clock.Advance(time.Minute)
	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if st := f.b.Status(); st.Failing != 0 || st.LastError != "" || st.Uploads != 2 || f.b.Degraded() != nil {
		t.Fatalf("after the retry: status %+v", st)
	}

	// A deletion refused: the backup is uploaded, the one it replaces
	// stays and the round fails; the next round deletes it without
	// uploading again.
	f.clock.Advance(6 * time.Hour)
	f.srv.Refuse("DELETE")
	copies := f.copies
	if err := f.b.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "the backup was uploaded, but deleting an older one failed") {
		t.Fatalf("err = %v", err)
	}
	newest := offsite.ObjectName(f.clock.Now())
	if got := names(t, f.b); len(got) != 3 || got[2] != newest || f.b.Degraded() == nil {
		t.Fatalf("backups %v, want 3 ending with %s, and degraded", got, newest)
	}
	f.srv.Refuse()
	f.clock.Advance(time.Minute)
	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(t, f.b); f.copies != copies+1 || len(got) != 2 || got[1] != newest || f.b.Degraded() != nil {
		t.Fatalf("backups %v after %d copies, want 2 ending with %s after 1", got, f.copies-copies, newest)
	}
}

// TestBackupsStalled: an upload on a connection that takes nothing and
// never answers fails once it made no progress for the bucket's stall
// time, releasing the copy (the store's read transaction), and counts as
// a failed round; the next round, on a server that answers again,
// uploads. A listing the server never answers fails the same way.
func TestBackupsStalled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "p", 2)
	f.b.Bucket = f.dial(t, "p", offsite.Options{MaxRetries: 1, Stall: 300 * time.Millisecond})
	f.srv.Stall("PUT")
	released := make(chan struct{})
	copyData := f.b.Backup
	f.b.Backup = func(ctx context.Context, w io.Writer, before func(int64)) (int64, error) {
		defer close(released)
		return copyData(ctx, w, before)
	}
	err := f.b.RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), "made no progress for 300ms") || !strings.Contains(err.Error(), "s3://latchkey-backups/p/") {
		t.Fatalf("err = %v, want the stalled upload named", err)
	}
	select {
	case <-released:
	default:
		t.Fatal("RunOnce returned with the copy still running")
	}
	if st := f.b.Status(); st.Failing != 1 || st.Uploads != 0 || f.b.Degraded() == nil {
		t.Fatalf("status %+v after a stalled upload, want one failure and degraded", st)
	}
	f.srv.Stall()
	f.b.Backup = copyData
	f.clock.Advance(time.Minute)
	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(t, f.b); len(got) != 1 || f.b.Degraded() != nil {
		t.Fatalf("backups %v after the retry, want one and not degraded", got)
	}

	// A listing the server never answers (a restart's first round
	// lists) fails the same way, instead of holding the scheduler.
	again := f.backups(t, "p", 2)
	again.Bucket = f.dial(t, "p", offsite.Options{MaxRetries: 1, Stall: 300 * time.Millisecond})
	f.srv.Stall("GET")
	if err := again.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "s3://latchkey-backups/p/: the listing made no progress for 300ms") {
		t.Fatalf("err = %v, want the stalled listing named", err)
	}
	f.srv.Stall()
}

// TestBackupsBadCopyOrCredentials: a copy that fails before it starts,
// or one cut short, and credentials the server does not know, fail the
// round with one line and upload nothing.
func TestBackupsBadCopyOrCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", 2)
	b := f.backups(t, "", 2)
	b.Backup = func(context.Context, io.Writer, func(int64)) (int64, error) {
		return 0, errors.New("data file is not open")
	}
	if err := b.RunOnce(ctx); err == nil || err.Error() != "backup of the data file: data file is not open" {
		t.Fatalf("err = %v", err)
	}
	b2 := f.backups(t, "", 2)
	b2.Backup = func(_ context.Context, w io.Writer, before func(int64)) (int64, error) {
		before(100)
		n, _ := w.Write(make([]byte, 40))
		return int64(n), errors.New("read error")
	}
	if err := b2.RunOnce(ctx); err == nil || !strings.Contains(err.Error(), "read error") {
		t.Fatalf("err = %v", err)
	}
	if keys := f.srv.Keys(t, "latchkey-backups", ""); len(keys) != 0 {
		t.Fatalf("objects %v after failed copies", keys)
	}

	tg, _ := offsite.ParseURL(f.srv.URL("latchkey-backups", ""))
	wrong, _ := offsite.Dial(tg, offsite.Credentials{AccessKeyID: "AKIAOTHER", SecretAccessKey: "x"}, offsite.Options{MaxRetries: 1})
	if _, err := wrong.List(ctx); err == nil || !strings.Contains(err.Error(), "(InvalidAccessKeyId)") {
		t.Fatalf("err = %v", err)
	}
	if _, err := offsite.CredentialsFromEnv(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("err = %v", err)
	}
}
