package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

var backup = &command{
	name:    "backup",
	summary: "download a consistent copy of the live data file",
	help: "Download a consistent copy of the running server's data file. FILE is written\n" +
		"atomically (a temporary file beside it, synced, then renamed) with mode 0600;\n" +
		"--out - writes the copy to standard output. The copy is opened like any data file,\n" +
		"with the same master key. A server on PostgreSQL (--database-url) has no data\n" +
		"file: it refuses (501 NOT_SUPPORTED), and pg_dump backs the database up.",
	flags: func(fs *flag.FlagSet) action {
		out := fs.String("out", "", "`FILE` to write, or - for standard output (required)")
		return func(ctx context.Context, c *call) error {
			if *out == "" {
				return usagef("--out is required")
			}
			if *out == "-" {
				_, err := c.api.download(ctx, "/api/v1/admin/backup", c.out)
				return err
			}
			if sameFile(*out, c.data) {
				return fmt.Errorf("refusing to write the backup over the live data file %s", *out)
			}
			n, err := writeAtomic(*out, func(w io.Writer) (int64, error) {
				return c.api.download(ctx, "/api/v1/admin/backup", w)
			})
			if err != nil {
				return err
			}
			if c.json {
				raw, err := json.Marshal(struct {
					Success bool   `json:"success"`
					Out     string `json:"out"`
					Bytes   int64  `json:"bytes"`
				}{true, *out, n})
				if err != nil {
					return err
				}
				return printJSON(c.out, raw)
			}
			_, err = fmt.Fprintf(c.out, "Wrote a backup of %s to %s.\n", count(n, "byte"), *out)
			return err
		}
	},
}

var errStalled = errors.New("no data for 30 s")

// download streams a GET of path into w and returns the bytes written.
// Rather than a deadline for the whole transfer, it aborts when no data
// arrives for requestTimeout, so a large file is not cut short. A body
// shorter than its Content-Length is an error.
func (c *client) download(ctx context.Context, path string, w io.Writer) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(requestTimeout, func() { cancel(errStalled) })
	defer stall.Stop()

	req, err := c.request(ctx, "GET", path, nil, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/octet-stream")
	hc := c.http
	if c.ownClient {
		hc = &http.Client{} // the stall timer bounds the transfer instead
	}
	res, err := hc.Do(req)
	if err != nil {
		if errors.Is(context.Cause(ctx), errStalled) {
			return 0, fmt.Errorf("backup from %s: %w", c.base, errStalled)
		}
		return 0, c.networkError(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, readAPIError(res)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/octet-stream") {
		return 0, fmt.Errorf("backup from %s: unexpected content type %q", c.base, ct)
	}
	r := &progressReader{r: res.Body, progress: func() { stall.Reset(requestTimeout) }}
	n, err := io.Copy(w, r)
	switch {
	case err != nil && r.err != nil && errors.Is(context.Cause(ctx), errStalled):
		return n, fmt.Errorf("backup from %s: %w", c.base, errStalled)
	case err != nil && r.err != nil:
		return n, fmt.Errorf("backup from %s interrupted after %s: %v", c.base, count(n, "byte"), err)
	case err != nil:
		return n, fmt.Errorf("write backup: %w", err)
	case res.ContentLength >= 0 && n != res.ContentLength:
		return n, fmt.Errorf("backup from %s: got %d of %s", c.base, n, count(res.ContentLength, "byte"))
	}
	return n, nil
}

// progressReader calls progress after each read that returned data and
// keeps the last read error, telling read failures from write failures.
type progressReader struct {
	r        io.Reader
	progress func()
	err      error
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}

// writeAtomic writes path through fill: into a temporary file in the same
// directory (mode 0600), synced, then renamed over path, and the directory
// synced. On error path is untouched and the temporary file removed.
func writeAtomic(path string, fill func(io.Writer) (int64, error)) (n int64, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp, renamed := f.Name(), false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return 0, err
	}
	if n, err = fill(f); err != nil {
		return n, err
	}
	if err := f.Sync(); err != nil {
		return n, err
	}
	if err := f.Close(); err != nil {
		return n, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return n, err
	}
	renamed = true
	return n, syncDir(dir)
}

// syncDir makes a rename in dir durable; Windows has no directory fsync.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
