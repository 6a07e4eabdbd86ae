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
	f.srv.Stall("GET")
	var buf bytes.Buffer
	if _, err := f.b.Bucket.Download(ctx, name, &buf, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "s3://latchkey-backups/p/"+name+": the download made no progress for 300ms") {
		t.Fatalf("err = %v, want the stalled download named", err)
	}
	f.srv.Stall()
	buf.Reset()
	if n, err := f.b.Bucket.Download(ctx, name, &buf, 0); err != nil || n != int64(buf.Len()) || buf.String() != string(f.data(1)) {
		t.Fatalf("download: %d bytes %q, %v", n, buf.String(), err)
	}
	if _, err := f.b.Bucket.Download(ctx, "latchkey-20990101T000000Z.db", &buf, 0); !errors.Is(err, offsite.ErrNoBackup) {
		t.Fatalf("err = %v, want ErrNoBackup", err)
	}
}
