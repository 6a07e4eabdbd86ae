package bolt_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
	"latchkey/store/bolt"
)

// latchkeyFile writes a real data file holding some rows and returns its
// bytes.
func latchkeyFile(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if err := db.Update(ctx, func(tx store.Tx) error {
			return tx.PutProject(&store.Project{ID: strings.Repeat("p", 30) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Name: strings.Repeat("n", 400)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// boltFile writes a bbolt file with the given buckets and returns its
// bytes.
func boltFile(t *testing.T, buckets ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	b, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bbolt.Tx) error {
		for _, name := range buckets {
			bk, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			if err := bk.Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, _ := os.ReadFile(path)
	return data
}

// CheckFile, Open and a data file of another program: bbolt only.

// TestCheckFile: CheckFile tells a first start (no file, empty file) from
// a usable data file, and refuses garbage, another program's bbolt file,
// a truncated file and a newer schema with an error naming the file,
// without changing it.
func TestCheckFile(t *testing.T) {
	t.Parallel()
	good := latchkeyFile(t)
	pageSize := int(binary.NativeEndian.Uint32(good[16+8:]))
	// The pages in use: the high-water mark of the newer meta page. The
	// file may be longer (bbolt grows it ahead).
	meta := func(off int) (pgid, txid uint64) {
		return binary.NativeEndian.Uint64(good[off+16+40:]), binary.NativeEndian.Uint64(good[off+16+48:])
	}
	used, tx0 := meta(0)
	if pgid1, tx1 := meta(pageSize); tx1 > tx0 {
		used = pgid1
	}
	usedSize := int(used) * pageSize
	if usedSize <= 4*pageSize || usedSize > len(good) {
		t.Fatalf("the test file uses %d of its %d bytes", usedSize, len(good))
	}
	garbage := make([]byte, 64<<10)
	rand.Read(garbage)
	firstMetaDamaged := bytes.Clone(good)
	firstMetaDamaged[16+20] ^= 0xff // inside meta 0: its checksum fails, meta 1 stands
	newer := bytes.Clone(good)
	{
		path := filepath.Join(t.TempDir(), "newer.db")
		os.WriteFile(path, newer, 0o600)
		b, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Update(func(tx *bbolt.Tx) error {
			v := make([]byte, 8)
			binary.BigEndian.PutUint64(v, bolt.SchemaVersion+1)
			return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), v)
		})
		b.Close()
		newer, _ = os.ReadFile(path)
	}
	for _, tc := range []struct {
		name    string
		data    []byte // nil: no file
		fresh   bool
		wantErr error
		text    string
	}{
		{name: "no file", fresh: true},
		{name: "empty file", data: []byte{}, fresh: true},
		{name: "latchkey file", data: good},
		{name: "first meta page damaged", data: firstMetaDamaged},
		{name: "bbolt file without buckets", data: boltFile(t)},
		{name: "garbage", data: garbage, wantErr: bolt.ErrNotLatchkey, text: "not a latchkey data file"},
		{name: "a few bytes", data: []byte("hello\n"), wantErr: bolt.ErrNotLatchkey, text: "not a latchkey data file"},
		{name: "text file of 8 KiB", data: bytes.Repeat([]byte("latchkey\n"), 1000), wantErr: bolt.ErrNotLatchkey, text: "not a latchkey data file"},
		{name: "another program's bbolt file", data: boltFile(t, "widgets"), wantErr: bolt.ErrNotLatchkey, text: "another program"},
		{name: "cut after its last used page", data: good[:usedSize]},
		{name: "truncated by one used page", data: good[:usedSize-pageSize], wantErr: bolt.ErrTruncated, text: "truncated"},
		{name: "truncated to half", data: good[:usedSize/2], wantErr: bolt.ErrTruncated, text: "truncated"},
		{name: "truncated to its meta pages", data: good[:2*pageSize], wantErr: bolt.ErrTruncated, text: "restore it from a backup"},
		{name: "truncated inside a meta page", data: good[:pageSize+100], wantErr: bolt.ErrTruncated, text: "truncated"},
		{name: "newer schema", data: newer, text: "upgrade latchkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "latchkey.db")
			if tc.data != nil {
				if err := os.WriteFile(path, tc.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fresh, err := bolt.CheckFile(path, time.Second)
			switch {
			case tc.text == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.text != "" && (err == nil || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), path) && tc.wantErr != nil):
				t.Fatalf("err = %v, want one naming the file and saying %q", err, tc.text)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case fresh != tc.fresh:
				t.Fatalf("fresh = %v, want %v", fresh, tc.fresh)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			after, statErr := os.ReadFile(path)
			if tc.data == nil {
				if !errors.Is(statErr, os.ErrNotExist) {
					t.Fatal("CheckFile created the file")
				}
			} else if !bytes.Equal(after, tc.data) {
				t.Fatal("CheckFile changed the file")
			}
			if tc.wantErr == nil && tc.text == "" {
				db, _, err := store.Open(ctx, path, store.Options{})
				if err != nil {
					t.Fatalf("Open after a passing check: %v", err)
				}
				if err := db.(store.File).Check(); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
		})
	}

	dir := t.TempDir()
	if _, err := bolt.CheckFile(dir, time.Second); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("a directory: err = %v", err)
	}
}

// TestCheckFileInUse: a file another process (here: another open) holds
// is ErrInUse after the lock timeout.
func TestCheckFileInUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := bolt.CheckFile(path, 50*time.Millisecond); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
}

// TestOpenRefusesAnotherProgramsFile: Open leaves another program's
// bbolt file as it is.
func TestOpenRefusesAnotherProgramsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	data := boltFile(t, "widgets")
	os.WriteFile(path, data, 0o600)
	if _, _, err := store.Open(ctx, path, store.Options{}); !errors.Is(err, bolt.ErrNotLatchkey) {
		t.Fatalf("err = %v, want ErrNotLatchkey", err)
	}
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("meta")) != nil {
			t.Fatal("Open added latchkey's buckets to another program's file")
		}
		return nil
	})
}
