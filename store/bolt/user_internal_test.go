package bolt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// oldUserRow is a user row as the compact encoding wrote it before users
// had groups and metadata: ada@example.com, verified and vouched, with
// an external id, a first name and a company.
const oldUserRow = "01020193a0d5c3d27e8090000000000000bb0f616461406578616d706c652e636f6d056578742d3103416461010461636d651e18ea55ac4e7b400018ea55ac8a160a00"

// TestUserRowBeforeGroups: a row written before groups and metadata
// reads as it did, with neither (nil, not empty), and is written again
// byte for byte while the user has neither.
func TestUserRowBeforeGroups(t *testing.T) {
	t.Parallel()
	raw, err := hex.DecodeString(oldUserRow)
	if err != nil {
		t.Fatal(err)
	}
	id := "0193a0d5-c3d2-7e80-9000-0000000000aa"
	u, err := decodeUser([]byte(id), raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ada@example.com" || u.ExternalUserID != "ext-1" || u.FirstName != "Ada" || u.CompanyID != "acme" ||
		u.EmailVerified == nil || !*u.EmailVerified || u.Vouched == nil || !*u.Vouched || u.Disabled ||
		!u.CreatedAt.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) || !u.UpdatedAt.Equal(time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC)) {
		t.Fatalf("old row read as %+v", u)
	}
	if u.Groups != nil || u.Metadata != nil {
		t.Fatalf("old row: groups %#v, metadata %q; want nil", u.Groups, u.Metadata)
	}
	if again := encodeUser(u); !bytes.Equal(again, raw) {
		t.Fatalf("old row written again as\n%x\nwant\n%x", again, raw)
	}
	// A JSON row (before the compact encoding) has neither either.
	j, err := decodeUser([]byte(id), []byte(`{"id":"`+id+`","projectId":"p","email":"ada@example.com","createdAt":"2026-11-22T10:00:00Z"}`))
	if err != nil || j.Groups != nil || j.Metadata != nil {
		t.Fatalf("JSON row: %+v, %v", j, err)
	}
}

// TestUserGroupsMetadataEncoding: groups and metadata come back exactly,
// none (nil) apart from empty ([] and {}); a row whose groups section
// is cut short or claims more groups than it has bytes is refused.
func TestUserGroupsMetadataEncoding(t *testing.T) {
	t.Parallel()
	base := store.User{ID: "0193a0d5-c3d2-7e80-9000-0000000000aa", ProjectID: "p", Email: "ada@example.com", CreatedAt: t0}
	for _, c := range []struct {
		groups []string
		meta   json.RawMessage
	}{
		{nil, nil},
		{[]string{}, nil},
		{nil, json.RawMessage(`{}`)},
		{[]string{}, json.RawMessage(`{}`)},
		{[]string{"admins", "ops.eu-1", ""}, json.RawMessage(`{"role": "admin", "n":[1, 2.50]}`)},
	} {
		u := base
		u.Groups, u.Metadata = c.groups, c.meta
		got, err := decodeUser([]byte(u.ID), encodeUser(&u))
		if err != nil {
			t.Fatalf("%#v %q: %v", c.groups, c.meta, err)
		}
		if (got.Groups == nil) != (c.groups == nil) || !slices.Equal(got.Groups, c.groups) ||
			(got.Metadata == nil) != (c.meta == nil) || !bytes.Equal(got.Metadata, c.meta) {
			t.Fatalf("wrote %#v %q, read %#v %q", c.groups, c.meta, got.Groups, got.Metadata)
		}
	}
	u := base
	u.Groups = []string{"admins"}
	v := encodeUser(&u)
	for _, bad := range [][]byte{
		v[:len(v)-1], // the last group cut short
		append(v[:len(v)-8:len(v)-8], 200, 1, 'a'), // 200 groups in 2 bytes
	} {
		if _, err := decodeUser([]byte(u.ID), bad); err == nil {
			t.Fatalf("decodeUser took a malformed groups section %x", bad)
		}
	}
}
