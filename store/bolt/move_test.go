package bolt_test

import (
	"reflect"
	"testing"

	"latchkey/store"
	"latchkey/store/bolt"
	"latchkey/store/storetest"
)

// TestCopyCarriesEveryBucket: a data file holding the fixture (every kind
// of record, every field set) has a row in every bucket a copy carries;
// copied into a new data file, every record comes out as it was written,
// by kind and count, and the new file holds as many keys in each bucket
// as the first (what the import rebuilds included). store's
// TestCopyCarriesEveryRecord takes the fixture through the backend under
// test and back.
func TestCopyCarriesEveryBucket(t *testing.T) {
	t.Parallel()
	src, _ := openFile(t, store.Options{})
	want := storetest.Normalize(t, storetest.WriteFixture(t, src))
	srcKeys := bolt.BucketKeys(t, src)
	for _, b := range bolt.ExportedBuckets() {
		if srcKeys[b] == 0 {
			t.Errorf("the fixture leaves bucket %s empty: a copy that drops it would pass", b)
		}
	}
	storetest.SameRecords(t, "the fixture's data file", storetest.Records(t, src), want)

	dst, _ := openFile(t, store.Options{})
	counts, err := store.Copy(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if wantCounts := storetest.Counts(want); !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("Copy counted %v, want %v", counts, wantCounts)
	}
	storetest.SameRecords(t, "the copy", storetest.Records(t, dst), want)
	if got := bolt.BucketKeys(t, dst); !reflect.DeepEqual(got, srcKeys) {
		t.Errorf("keys by bucket after the copy %v, want the original's %v", got, srcKeys)
	}
	check(t, dst)
}
