package offsite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Credentials sign the requests to the bucket (AWS signature version 4).
type Credentials struct {
	AccessKeyID, SecretAccessKey string
	// SessionToken is set for temporary credentials (AWS_SESSION_TOKEN).
	SessionToken string
}

// CredentialsFromEnv reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN; the first two are required.
func CredentialsFromEnv(getenv func(string) string) (Credentials, error) {
	c := Credentials{getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return c, errors.New("the bucket's credentials are missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)")
	}
	return c, nil
}

// Options tune Dial; the zero value is right for production.
type Options struct {
	// MaxRetries is how many times the client tries a request that
	// failed for a reason worth retrying (0: the client's default, 10,
	// with backoff of at most a second between tries; 1: no retry).
	MaxRetries int
	// Transport replaces the client's HTTP transport (tests).
	Transport http.RoundTripper
	// PartSize is the size of an upload's parts, held in memory one at a
	// time, and the largest upload sent in one request (0: 16 MiB; at
	// least 5 MiB, S3's smallest part).
	PartSize int
	// Stall fails an operation on the bucket (a listing, an upload, a
	// download, a deletion) that made no progress for this long: no byte
	// sent or received, no answer (0: StallAfter).
	Stall time.Duration
}

// StallAfter is how long an operation on the bucket may make no
// progress before it fails (Options.Stall's default): as long as the S3
// client waits for an answer's headers. An upload's copy holds the
// store's read transaction open, which keeps the data file from reusing
// its free pages, so an upload stuck on a connection that takes nothing
// must end; a listing stuck mid-answer must not hold the scheduler.
const StallAfter = time.Minute

// Bucket is the target's bucket, through an S3 client. Safe for
// concurrent use.
type Bucket struct {
	t        Target
	c        *minio.Client
	partSize uint64
	stall    time.Duration
}

// Dial returns the bucket of t; it sends nothing until it is used.
func Dial(t Target, cred Credentials, o Options) (*Bucket, error) {
	base := o.Transport
	if base == nil {
		tr, err := minio.DefaultTransport(t.Secure)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", t, err)
		}
		base = tr
	}
	c, err := minio.New(t.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cred.AccessKeyID, cred.SecretAccessKey, cred.SessionToken),
		Secure:     t.Secure,
		Region:     t.Region,
		MaxRetries: o.MaxRetries,
		Transport:  progressTransport{base},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", t, err)
	}
	part := uint64(defaultPartSize)
	if o.PartSize > 0 {
		part = uint64(max(o.PartSize, 5<<20))
	}
	return &Bucket{t: t, c: c, partSize: part, stall: cmp.Or(o.Stall, StallAfter)}, nil
}

// Target returns where the bucket is.
func (b *Bucket) Target() Target { return b.t }

// Object is one backup in the bucket.
type Object struct {
	// Name is its name under the target's prefix
	// (latchkey-20260102T030405Z.db).
	Name string
	// Time is when it was taken (from its name), UTC.
	Time time.Time
	// Size is its size in bytes.
	Size int64
}

// nameLayout is the time in a backup's name: UTC, fixed width, so that
// names sort as their times do.
const nameLayout = "20060102T150405Z"

// namePattern is a backup's name; compiled at its first use, not at
// every start of the binary.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^latchkey-(\d{8}T\d{6}Z)\.db$`) })

// ObjectName is the name of the backup taken at t.
func ObjectName(t time.Time) string { return "latchkey-" + t.UTC().Format(nameLayout) + ".db" }

// NameTime returns the time in a backup's name; ok is false for any
// other name (objects latchkey never touches).
func NameTime(name string) (t time.Time, ok bool) {
	m := namePattern().FindStringSubmatch(name)
	if m == nil {
		return t, false
	}
	t, err := time.Parse(nameLayout, m[1])
	return t, err == nil
}

// put uploads size bytes from r as name. The body streams: the client
// sends it in one request up to the part size, else in parts, holding
// one part in memory at a time.
func (b *Bucket) put(ctx context.Context, name string, r io.Reader, size int64) (err error) {
	ctx, moved, done := b.watch(ctx, "the upload of "+name)
	defer func() { err = done(err) }()
	info, err := b.c.PutObject(ctx, b.t.Bucket, b.t.Prefix+name, &movingBody{r: r, moved: moved}, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    b.partSize,
	})
	if err != nil {
		return b.describe(err)
	}
	if info.Size != size {
		return fmt.Errorf("%s: the bucket stored %d of %d bytes of %s", b.t, info.Size, size, name)
	}
	return nil
}

// defaultPartSize is the size of an upload's parts (one in memory at a
// time) and the largest file sent in a single request.
const defaultPartSize = 16 << 20

// List returns the backups directly under the target's prefix, newest
// first. Other objects there are left out (and never deleted).
func (b *Bucket) List(ctx context.Context) (out []Object, err error) {
	ctx, _, done := b.watch(ctx, "the listing")
	defer func() {
		if err = done(err); err != nil {
			out = nil
		}
	}()
	for o := range b.c.ListObjectsIter(ctx, b.t.Bucket, minio.ListObjectsOptions{Prefix: b.t.Prefix + "latchkey-"}) {
		if o.Err != nil {
			return nil, b.describe(o.Err)
		}
		name := strings.TrimPrefix(o.Key, b.t.Prefix)
		if t, ok := NameTime(name); ok {
			out = append(out, Object{Name: name, Time: t, Size: o.Size})
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return cmp.Compare(b.Name, a.Name) })
	return out, nil
}

// ErrNoBackup is a backup the bucket does not hold (Download).
var ErrNoBackup = errors.New("no such backup")

// open returns the backup name (under the prefix) for reading, and its
// size; ErrNoBackup (wrapped) when the bucket has no such object.
func (b *Bucket) open(ctx context.Context, name string) (io.ReadCloser, int64, error) {
	o, err := b.c.GetObject(ctx, b.t.Bucket, b.t.Prefix+name, minio.GetObjectOptions{})
	if err == nil {
		var st minio.ObjectInfo
		if st, err = o.Stat(); err == nil {
			return o, st.Size, nil
		}
		o.Close()
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, 0, fmt.Errorf("%s%s: %w", b.t, name, ErrNoBackup)
	}
	return nil, 0, b.describe(err)
}

// Download writes the backup name (under the prefix) into w and returns
// its size; ErrNoBackup (wrapped) when the bucket has no such object. It
// fails when the transfer makes no progress for the stall time, and
// when fewer bytes come than the object holds.
func (b *Bucket) Download(ctx context.Context, name string, w io.Writer) (n int64, err error) {
	ctx, _, done := b.watch(ctx, "the download of "+name)
	defer func() { err = done(err) }()
	obj, size, err := b.open(ctx, name)
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	n, err = io.Copy(w, obj)
	switch {
	case err != nil:
		return n, fmt.Errorf("download of %s%s: %v", b.t, name, err)
	case n != size:
		return n, fmt.Errorf("download of %s%s: got %d of %d bytes", b.t, name, n, size)
	}
	return n, nil
}

// remove deletes the backup name.
func (b *Bucket) remove(ctx context.Context, name string) (err error) {
	ctx, _, done := b.watch(ctx, "the deletion of "+name)
	defer func() { err = done(err) }()
	if err := b.c.RemoveObject(ctx, b.t.Bucket, b.t.Prefix+name, minio.RemoveObjectOptions{}); err != nil {
		return b.describe(err)
	}
	return nil
}

// describe puts the server's refusal in one line naming the target (the
// error code and message S3 sent, never a credential), or the client's
// own error (a connection refused, a name that does not resolve).
func (b *Bucket) describe(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if r := minio.ToErrorResponse(err); r.Code != "" {
		msg := r.Message
		if msg == "" {
			msg = http.StatusText(r.StatusCode)
		}
		return fmt.Errorf("%s: %s (%s)", b.t, msg, r.Code)
	}
	return fmt.Errorf("%s: %v", b.t, err)
}

// watch returns ctx for one operation on the bucket (what names it in
// the error), cancelled once its transfer made no progress for the
// stall time; moved notes progress the requests' transport does not see
// (reading an upload's source). done stops the watchdog and returns the
// operation's err, or the stall's error when the watchdog ended it.
func (b *Bucket) watch(ctx context.Context, what string) (_ context.Context, moved func(), done func(error) error) {
	ctx, cancel := context.WithCancelCause(ctx)
	stalled := fmt.Errorf("%s: %s made no progress for %v; stopped", b.t, what, b.stall)
	watchdog := time.AfterFunc(b.stall, func() { cancel(stalled) })
	moved = func() { watchdog.Reset(b.stall) }
	done = func(err error) error {
		watchdog.Stop()
		if err != nil && context.Cause(ctx) == stalled {
			err = stalled
		}
		cancel(nil)
		return err
	}
	return withProgress(ctx, moved), moved, done
}

// progressKey is the context key of the function a request calls as its
// transfer moves (withProgress).
type progressKey struct{}

// withProgress returns ctx whose requests to the bucket call moved each
// time their transfer moves: a read of the body to send, the answer's
// headers, a read of the answer's body. The scheduler's stall watchdog
// counts on it.
func withProgress(ctx context.Context, moved func()) context.Context {
	return context.WithValue(ctx, progressKey{}, moved)
}

// progressTransport calls a request's progress function (withProgress)
// as its transfer moves; requests without one pass through.
type progressTransport struct{ base http.RoundTripper }

func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	moved, _ := req.Context().Value(progressKey{}).(func())
	if moved == nil {
		return t.base.RoundTrip(req)
	}
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = &movingBody{r: req.Body, moved: moved}
		if get := req.GetBody; get != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				body, err := get()
				if err != nil {
					return nil, err
				}
				return &movingBody{r: body, moved: moved}, nil
			}
		}
	}
	res, err := t.base.RoundTrip(req)
	if err == nil {
		moved()
		res.Body = &movingBody{r: res.Body, moved: moved}
	}
	return res, err
}

// movingBody calls moved after each read that returned data; Close
// closes r when it is an io.Closer.
type movingBody struct {
	r     io.Reader
	moved func()
}

func (b *movingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.moved()
	}
	return n, err
}

func (b *movingBody) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
