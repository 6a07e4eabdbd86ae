package bolt

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// exportedBuckets returns the buckets Export carries: bucketMeta (the
// settings) and exportBuckets's, each once.
func exportedBuckets() []string {
	out := []string{string(bucketMeta)}
	for _, s := range exportBuckets {
		if !slices.Contains(out, string(s.bucket)) {
			out = append(out, string(s.bucket))
		}
	}
	return out
}

// ExportedBuckets returns the buckets a copy of a data file carries
// (for package bolt_test).
func ExportedBuckets() []string { return exportedBuckets() }

// BucketKeys returns how many keys each bucket of the data file db holds
// (for package bolt_test).
func BucketKeys(t testing.TB, db store.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := db.(*DB).bolt.View(func(btx *bbolt.Tx) error {
		return btx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			out[string(name)] = b.Stats().KeyN
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBoltMoveNamesEveryBucket: every bucket of a data file is either
// carried by Export or named in notExported, not both, and both
// lists name only real buckets; a bucket added without saying how a copy
// moves it fails here.
func TestBoltMoveNamesEveryBucket(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(filepath.Join(t.TempDir(), "latchkey.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var onFile []string
	db.bolt.View(func(btx *bbolt.Tx) error {
		return btx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			onFile = append(onFile, string(name))
			return nil
		})
	})
	var all []string
	for _, b := range allBuckets {
		all = append(all, string(b))
	}
	sort.Strings(all)
	if !slices.Equal(onFile, all) {
		t.Errorf("a new file holds the buckets %q, allBuckets names %q", onFile, all)
	}
	exported := exportedBuckets()
	seen := map[string]bool{}
	for _, s := range exportBuckets {
		name := string(s.bucket)
		if seen[name] {
			t.Errorf("Export walks bucket %s twice", name)
		}
		seen[name] = true
	}
	for _, name := range onFile {
		_, skipped := notExported[name]
		carried := slices.Contains(exported, name)
		switch {
		case carried && skipped:
			t.Errorf("bucket %s is carried by Export and named in notExported (%s)", name, notExported[name])
		case !carried && !skipped:
			t.Errorf("bucket %s is neither carried by Export (exportBuckets) nor named in notExported: a copy would leave it behind", name)
		}
	}
	for _, name := range exported {
		if !slices.Contains(onFile, name) {
			t.Errorf("Export walks bucket %s, which a data file does not have", name)
		}
	}
	for name, why := range notExported {
		if !slices.Contains(onFile, name) {
			t.Errorf("notExported names bucket %s (%s), which a data file does not have", name, why)
		}
		if why == "" {
			t.Errorf("notExported does not say why bucket %s is not carried", name)
		}
	}
}
