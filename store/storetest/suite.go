// The store contract as tests: one suite per aggregate of store.Tx.

package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// Suite is the store contract as tests, for one engine: what the doc
// comments of store.DB and of each aggregate of store.Tx (Users,
// Sessions, Codes…) promise, every engine keeps, so each engine's
// package runs every suite against its own stores:
//
//	func TestConformance(t *testing.T) {
//		t.Parallel()
//		storetest.Suite{New: newStore}.Run(t)
//	}
//
// Each method (one per aggregate, named for it, and DB for the
// transactions) runs that aggregate's checks as parallel subtests, each
// on a store of its own: exact round trips of every field, answers for
// what is not there (ids that cannot be text included), deletions and
// what they take along, order and pages, sweeps at an injected time. A
// method also runs alone: t.Run("Users", s.Users).
//
// A new aggregate of store.Tx needs a method here, listed in suites
// (TestSuitesCoverTx fails until it is); a new field of a record fails
// the round trip that starts from a record with every field set
// (complete) until the suite sets it, and then every engine that does
// not keep it.
//
// What only one engine does (a data file's pages, the codecs of its
// records, PostgreSQL's round trips, plans and replicas) is tested in
// that engine's package.
type Suite struct {
	// New returns where a new, empty store of the engine under test is,
	// as store.Open takes it (a data file's path, a database's URL);
	// the store goes when t ends (NewFile for bbolt).
	New func(t testing.TB) string
}

// Run runs every suite, each a parallel subtest named for its
// aggregate.
func (s Suite) Run(t *testing.T) {
	t.Helper()
	parallel(t, s.suites())
}

// suites lists every suite: one per aggregate of store.Tx, and DB for
// the transactions themselves (TestSuitesCoverTx holds the list to
// store/tx.go).
func (s Suite) suites() []subtest {
	return []subtest{
		{"DB", s.DB},
		{"Instance", s.Instance},
		{"TLSCache", s.TLSCache},
		{"Projects", s.Projects},
		{"Users", s.Users},
		{"Sessions", s.Sessions},
		{"RefreshTokens", s.RefreshTokens},
		{"Codes", s.Codes},
		{"Factors", s.Factors},
		{"Passkeys", s.Passkeys},
		{"ExternalMethods", s.ExternalMethods},
		{"Identities", s.Identities},
		{"OAuthFlows", s.OAuthFlows},
		{"Webhooks", s.Webhooks},
		{"Outbox", s.Outbox},
		{"MailQueue", s.MailQueue},
		{"AuthEvents", s.AuthEvents},
		{"Expiry", s.Expiry},
		{"Templates", s.Templates},
		{"OIDCKeys", s.OIDCKeys},
		{"OIDCClients", s.OIDCClients},
		{"OIDCFlows", s.OIDCFlows},
		{"OIDCTokens", s.OIDCTokens},
		{"OIDCConsents", s.OIDCConsents},
		{"OIDCDevices", s.OIDCDevices},
		{"Hints", s.Hints},
	}
}

// subtest is a named test of a suite.
type subtest struct {
	name string
	run  func(t *testing.T)
}

// parallel runs each of tests as a parallel subtest of t. The tests of
// a suite share nothing: each opens its own store.
func parallel(t *testing.T, tests []subtest) {
	t.Helper()
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

// ctx is the context of the suites' store calls: never cancelled.
var ctx = context.Background()

// open opens a new store of the engine with opt, closed when t ends.
func (s Suite) open(t *testing.T, opt store.Options) store.DB {
	t.Helper()
	return openAt(t, s.New(t), opt)
}

// openAt opens the store at dsn with opt, closed when t ends.
func openAt(t *testing.T, dsn string, opt store.Options) store.DB {
	t.Helper()
	db, _, err := store.Open(ctx, dsn, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens dsn again with opt.
func reopen(t *testing.T, db store.DB, dsn string, opt store.Options) store.DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return openAt(t, dsn, opt)
}

// update runs fn in a write transaction and fails t on its error. A
// test returns its failures from fn as errors, or reports them with
// t.Error: fn may run on another goroutine, or more than once.
func update(t testing.TB, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails t on its error.
func view(t testing.TB, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.View(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// must returns v, panicking on err: for reads whose error no test
// expects.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// second returns the error of a call's two results.
func second[T any](_ T, err error) error { return err }

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }

// check runs a data file's consistency check in the middle of a test;
// a store without a file has nothing to check.
func check(t testing.TB, db store.DB) {
	t.Helper()
	if f, ok := db.(store.File); ok {
		if err := f.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// same fails t when got and want are not the same record (diff).
func same(t testing.TB, what string, got, want any) {
	t.Helper()
	if err := diff(what, got, want); err != nil {
		t.Fatal(err)
	}
}

// diff describes how got differs from want, nil when they are the same
// as store.Tx sees records: times as instants (their location is not
// part of the interface), nil and empty slices and maps alike (an
// engine's encoding need not tell them apart), and everything else
// exactly (a nil pointer is not a pointer to the zero value).
func diff(what string, got, want any) error {
	if !reflect.DeepEqual(normal(reflect.ValueOf(got)), normal(reflect.ValueOf(want))) {
		return fmt.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	return nil
}

var timeType = reflect.TypeFor[time.Time]()

// normal returns a copy of v as diff compares it: times in UTC, empty
// slices and maps nil.
func normal(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return normalValue(v).Interface()
}

func normalValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(normalValue(v.Elem()))
		return c
	case reflect.Struct:
		if v.Type() == timeType {
			return reflect.ValueOf(v.Interface().(time.Time).UTC())
		}
		c := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if !c.Field(i).CanSet() {
				return v
			}
			c.Field(i).Set(normalValue(v.Field(i)))
		}
		return c
	case reflect.Slice:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(normalValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), normalValue(it.Value()))
		}
		return c
	}
	return v
}

// complete fails t unless every field of the struct v points to is set,
// but those named in unset: the record a round trip starts with sets
// them all, so that a field added to a record type is added to the
// suites (and then to every engine) too.
func complete(t testing.TB, v any, unset ...string) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if rv.Field(i).IsZero() && !slices.Contains(unset, name) {
			t.Errorf("%s.%s is not set in the record the round trip starts with: give it a value", rv.Type().Name(), name)
		}
	}
}

// notText are ids that cannot be text (a NUL, bytes that are not
// UTF-8), as a URL or a header may bring them.
var notText = []string{"\x00", "\xff", "a\xc3"}

// noRowFor runs calls with each id of notText, in a write transaction
// of its own: each call must answer as for an id no row has (it returns
// nil when it does), and the transaction must go on (still then reads,
// and the transaction commits).
func noRowFor(t *testing.T, db store.DB, still func(tx store.Tx) error, calls func(tx store.Tx, bad string) map[string]error) {
	t.Helper()
	for _, bad := range notText {
		update(t, db, func(tx store.Tx) error {
			for name, err := range calls(tx, bad) {
				if err != nil {
					t.Errorf("%s with %q: %v", name, bad, err)
				}
			}
			return still(tx)
		})
	}
}

// wantNone returns nil when list is empty and err nil.
func wantNone[T any](list []T, err error) error {
	if len(list) != 0 || err != nil {
		return fmt.Errorf("%d rows, %v; want none", len(list), err)
	}
	return nil
}

// wantZero returns nil when n is 0 and err nil.
func wantZero(n int, err error) error {
	if n != 0 || err != nil {
		return fmt.Errorf("%d, %v; want 0", n, err)
	}
	return nil
}
