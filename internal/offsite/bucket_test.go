package offsite_test

import (
	"bytes"
	"errors"
	"latchkey/internal/offsite"
	"strings"
	"testing"
	"time"
)

// TestDownloadStalled: a download the server never answers fails once
// it made no progress for its stall time, naming the object; answered,
// it writes the object's bytes; a name the bucket lacks is ErrNoBackup.
func TestDownloadStalled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "p", 0)
	if err := f.b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	name := f.b.Status().LastName
	bucket := f.dial(t, "p", offsite.Options{MaxRetries: 1, Stall: 300 * time.Millisecond})
	f.srv.Stall("GET")
	var buf bytes.Buffer
	if _, err := bucket.Download(ctx, name, &buf); err == nil || !strings.Contains(err.Error(), "s3://latchkey-backups/p/: the download of "+name+" made no progress for 300ms") {
		t.Fatalf("err = %v, want the stalled download named", err)
	}
	f.srv.Stall()
	buf.Reset()
	if n, err := bucket.Download(ctx, name, &buf); err != nil || n != int64(buf.Len()) || buf.String() != string(f.data(1)) {
		t.Fatalf("download: %d bytes %q, %v", n, buf.String(), err)
	}
	if _, err := bucket.Download(ctx, "latchkey-20990101T000000Z.db", &buf); !errors.Is(err, offsite.ErrNoBackup) {
		t.Fatalf("err = %v, want ErrNoBackup", err)
	}
}
