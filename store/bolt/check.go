package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// ErrNotLatchkey is returned (wrapped, naming the file) by CheckFile and
// Open for a file that is not a latchkey data file: not a bbolt file, or
// a bbolt file of another program.
var ErrNotLatchkey = errors.New("not a latchkey data file")

// ErrTruncated is returned (wrapped, naming the file and its sizes) by
// CheckFile for a data file shorter than its own header says.
var ErrTruncated = errors.New("truncated")

// bbolt's on-disk header (go.etcd.io/bbolt/internal/common): every page
// starts with a 16-byte header; pages 0 and 1 hold a meta record each.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64 // magic, version, pageSize, flags, root{pgid, seq}, freelist, pgid, txid, checksum
	metaSumSize    = 56 // the bytes the checksum covers
)

// boltMeta is the part of a meta record CheckFile needs.
type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages the file must hold
	txid     uint64
}

// parseMeta reads a meta record from the page at b (page header
// included); ok is false unless magic, version and checksum hold, as
// bbolt's own Meta.Validate requires.
func parseMeta(b []byte) (m boltMeta, ok bool) {
	if len(b) < pageHeaderSize+metaSize {
		return m, false
	}
	rec := b[pageHeaderSize : pageHeaderSize+metaSize]
	le := binary.NativeEndian // bbolt writes its structs in the machine's byte order
	if le.Uint32(rec[0:]) != boltMagic || le.Uint32(rec[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(rec[:metaSumSize])
	if h.Sum64() != le.Uint64(rec[metaSumSize:]) {
		return m, false
	}
	return boltMeta{pageSize: le.Uint32(rec[8:]), pgid: le.Uint64(rec[40:]), txid: le.Uint64(rec[48:])}, true
}

// CheckFile looks at the data file at path before anything opens it for
// writing, so that a wrong file fails with a one-line error instead of
// being changed or crashing the process (bbolt maps the file into memory
// and faults on a page past its end). fresh is true when there is no file
// or it is empty: a first start. Otherwise the file must be a bbolt file
// whose pages are all present (else ErrTruncated), holding latchkey's
// buckets or none at all (else ErrNotLatchkey), with a schema version
// this binary knows; store.ErrInUse when another process holds it for
// longer than lockTimeout. CheckFile writes nothing.
func CheckFile(path string, lockTimeout time.Duration) (fresh bool, err error) {
	if fresh, err = CheckHeader(path); fresh || err != nil {
		return fresh, err
	}
	if lockTimeout <= 0 {
		lockTimeout = 2 * time.Second
	}
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if errors.Is(err, bbolt.ErrTimeout) {
		return false, store.ErrInUse
	} else if err != nil {
		return false, fmt.Errorf("data file %s is %w: %v", path, ErrNotLatchkey, err)
	}
	defer b.Close()
	err = b.View(func(tx *bbolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil { // a page that is not what its parent says
				err = fmt.Errorf("data file %s is damaged (%v): restore it from a backup", path, r)
			}
		}()
		return checkBuckets(tx, path)
	})
	return false, err
}

// CheckHeader is the part of CheckFile that reads only the file's first
// pages, without opening it as a database or taking its lock: fresh for
// no file or an empty one, else ErrTruncated or ErrNotLatchkey (no bbolt
// header). Open checks the rest (the buckets, the schema version, the
// lock) before it writes anything, so a start can call CheckHeader, then
// Open, and open the file once. CheckHeader writes nothing.
func CheckHeader(path string) (fresh bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("data file: %w", err)
	}
	if fi.IsDir() {
		return false, fmt.Errorf("data file %s is a directory", path)
	}
	if fi.Size() == 0 {
		return true, nil
	}
	return false, checkHeader(path, fi.Size())
}

// checkHeader reads both meta pages and checks that the file holds every
// page the newest valid one counts.
func checkHeader(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("data file: %w", err)
	}
	defer f.Close()
	notOurs := fmt.Errorf("data file %s is %w (no bbolt header)", path, ErrNotLatchkey)
	buf := make([]byte, pageHeaderSize+metaSize)
	read := func(off int64) (boltMeta, bool) {
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return boltMeta{}, false
		}
		return parseMeta(buf)
	}
	m0, ok0 := read(0)
	var m1 boltMeta
	ok1 := false
	if ok0 {
		m1, ok1 = read(int64(m0.pageSize))
	} else {
		// The first meta page is damaged: find the second one at each
		// page size bbolt could have used, as bbolt does.
		for ps := int64(1024); ps <= 1<<24 && ps < size && !ok1; ps <<= 1 {
			m1, ok1 = read(ps)
			ok1 = ok1 && int64(m1.pageSize) == ps
		}
	}
	m := m0
	switch {
	case !ok0 && !ok1:
		return notOurs
	case !ok0 || (ok1 && m1.txid > m0.txid):
		m = m1
	}
	if need := int64(m.pgid) * int64(m.pageSize); size < need || size < 2*int64(m.pageSize) {
		return fmt.Errorf("data file %s is %w: %d bytes, but its header counts %d (restore it from a backup)", path, ErrTruncated, size, max(need, 2*int64(m.pageSize)))
	}
	return nil
}

// checkBuckets accepts latchkey's buckets with a known schema version, or
// no bucket at all (a file bbolt initialized before the first start
// committed).
func checkBuckets(tx *bbolt.Tx, path string) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return errors.New("stop") })
		if empty {
			return nil
		}
		return fmt.Errorf("data file %s is %w (a bbolt file of another program)", path, ErrNotLatchkey)
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return fmt.Errorf("data file %s is %w (no schema version)", path, ErrNotLatchkey)
	}
	if got := binary.BigEndian.Uint64(v); got > SchemaVersion {
		return newerSchema(got)
	}
	return nil
}

// newerSchema is the error for a file written by a newer latchkey.
func newerSchema(got uint64) error {
	return fmt.Errorf("data file has schema version %d but this latchkey only knows version %d: upgrade latchkey", got, SchemaVersion)
}
