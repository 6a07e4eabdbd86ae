package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// compactTxSize bounds the bytes of keys and values Compact writes in one
// transaction, so that its memory does not grow with the file.
const compactTxSize = 64 << 20

// Compact writes a compacted copy of the data file at src to dst, with
// bbolt's Compact: every bucket and row copied in key order into pages
// filled completely, without the free pages a B+tree file keeps once it
// has grown (bbolt never gives them back to the file system). The copy
// is written to a temporary file beside dst, synced, and renamed to dst
// at the end, so dst never holds a partial copy. It returns the sizes of
// both files.
//
// The server must be stopped: src is opened read-only with lockTimeout
// for the lock, and a file held by a running server is store.ErrInUse. A
// file that is not a latchkey file is refused as CheckFile refuses it;
// dst must not exist. The copy is read with the same master key as src.
func Compact(src, dst string, lockTimeout time.Duration) (before, after int64, err error) {
	if a, b := filepath.Clean(src), filepath.Clean(dst); a == b {
		return 0, 0, errors.New("--out must name another file than --data")
	}
	if _, err := os.Stat(dst); err == nil {
		return 0, 0, fmt.Errorf("%s exists: compact writes a new file and never overwrites one", dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, 0, err
	}
	fresh, err := CheckFile(src, lockTimeout)
	if err != nil {
		return 0, 0, err
	}
	if fresh {
		return 0, 0, fmt.Errorf("data file %s does not exist or is empty", src)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return 0, 0, err
	}
	before = fi.Size()
	if lockTimeout <= 0 {
		lockTimeout = 2 * time.Second
	}
	from, err := bbolt.Open(src, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if errors.Is(err, bbolt.ErrTimeout) {
		return 0, 0, store.ErrInUse
	} else if err != nil {
		return 0, 0, fmt.Errorf("open data file: %w", err)
	}
	defer from.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return 0, 0, err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // after a successful rename, there is nothing to remove
	to, err := bbolt.Open(tmpName, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistArrayType})
	if err != nil {
		return 0, 0, err
	}
	if err := bbolt.Compact(to, from, compactTxSize); err != nil {
		to.Close()
		return 0, 0, fmt.Errorf("compact: %w", err)
	}
	if err := to.Close(); err != nil {
		return 0, 0, err
	}
	if fi, err = os.Stat(tmpName); err != nil {
		return 0, 0, err
	}
	after = fi.Size()
	if err := os.Rename(tmpName, dst); err != nil {
		return 0, 0, err
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return before, after, nil
}
