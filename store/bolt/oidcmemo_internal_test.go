package bolt

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
)

// fillEveryField sets every field of the struct v points to to a value that
// is not its zero (strings, numbers, bools, times, slices, maps and
// pointers), so that a copy that misses a field, or shares one, shows.
func fillEveryField(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		name := rv.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString(name + "-value")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			s := reflect.MakeSlice(f.Type(), 2, 2)
			for j := range 2 {
				if e := s.Index(j); e.Kind() == reflect.String {
					e.SetString(name)
				} else {
					e.SetUint(uint64(i + j))
				}
			}
			f.Set(s)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(name+"-value"))
			f.Set(m)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			p.Elem().SetInt(int64(i + 1))
			f.Set(p)
		case reflect.Struct:
			if f.Type() != reflect.TypeFor[time.Time]() {
				t.Fatalf("field %s: a struct the test cannot fill", name)
			}
			f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC)))
		default:
			t.Fatalf("field %s of kind %s: teach fillEveryField and the clone", name, f.Kind())
		}
	}
}

// sharesMemory reports the first field of a and b (structs of one
// type) whose slice (with elements), map or pointer is the same memory.
func sharesMemory(a, b any) string {
	ra, rb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range ra.NumField() {
		fa, fb := ra.Field(i), rb.Field(i)
		switch fa.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			// An empty slice has no elements to share.
			if !fa.IsNil() && !(fa.Kind() == reflect.Slice && fa.Len() == 0) && fa.UnsafePointer() == fb.UnsafePointer() {
				return ra.Type().Field(i).Name
			}
		}
	}
	return ""
}

// TestOIDCMemoClones: the memo's copies of a client and of an
// authorization request have every field of the original, share no
// slice, map or pointer with it, and keep nil and empty apart.
func TestOIDCMemoClones(t *testing.T) {
	testkit.EngineFree(t, "the bbolt backend's decoding of rows in memory")
	var c store.OIDCClient
	fillEveryField(t, &c)
	var r store.OIDCAuthRequest
	fillEveryField(t, &r)
	for _, tc := range []struct {
		name      string
		orig, cpy any
	}{
		{"client", &c, cloneOIDCClient(&c)},
		{"authorization request", &r, cloneOIDCAuthRequest(&r)},
		{"empty client", &store.OIDCClient{RedirectURIs: []string{}, SecretHash: []byte{}, Claims: map[string]string{}},
			cloneOIDCClient(&store.OIDCClient{RedirectURIs: []string{}, SecretHash: []byte{}, Claims: map[string]string{}})},
		{"empty request", &store.OIDCAuthRequest{Scopes: []string{}}, cloneOIDCAuthRequest(&store.OIDCAuthRequest{Scopes: []string{}})},
	} {
		if !reflect.DeepEqual(tc.orig, tc.cpy) {
			t.Errorf("%s: copy %+v, want %+v", tc.name, tc.cpy, tc.orig)
		}
		if f := sharesMemory(tc.orig, tc.cpy); f != "" {
			t.Errorf("%s: the copy shares %s with the original", tc.name, f)
		}
	}
}

// TestOIDCMemoDecode: a row decodes through the memo as JSON decodes
// it, the second time too; a changed row (the same key, other bytes)
// decodes as it now is; a caller's change to its value reaches no
// other caller.
func TestOIDCMemoDecode(t *testing.T) {
	testkit.EngineFree(t, "the bbolt backend's decoding of rows in memory")
	m := &jsonMemo[store.OIDCClient]{max: 2, clone: cloneOIDCClient}
	var c store.OIDCClient
	fillEveryField(t, &c)
	raw, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var want store.OIDCClient
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	first, err := m.decode(raw)
	if err != nil || !reflect.DeepEqual(first, &want) {
		t.Fatalf("first decode %+v, %v; want %+v", first, err, &want)
	}
	first.RedirectURIs[0], first.Name = "https://evil.example/cb", "changed"
	second, err := m.decode(raw)
	if err != nil || !reflect.DeepEqual(second, &want) {
		t.Fatalf("second decode %+v, %v; want %+v (a caller's change leaked)", second, err, &want)
	}
	c.RedirectURIs = []string{"https://new.example/cb"}
	changed, _ := json.Marshal(&c)
	got, err := m.decode(changed)
	if err != nil || !reflect.DeepEqual(got.RedirectURIs, c.RedirectURIs) {
		t.Fatalf("changed row decoded %v, %v; want %v", got.RedirectURIs, err, c.RedirectURIs)
	}
	// Full: it starts over, and still decodes.
	c.Name = "third"
	third, _ := json.Marshal(&c)
	if got, err := m.decode(third); err != nil || got.Name != "third" || len(m.byRaw) > m.max {
		t.Fatalf("third row: %+v, %v, %d kept (max %d)", got, err, len(m.byRaw), m.max)
	}
	if _, err := m.decode([]byte(`{"name":`)); err == nil {
		t.Fatal("a malformed row decoded")
	}
}
