package auth_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"latchkey/auth"
	"latchkey/store"
)

// TestAdminUserGroupsRules: what UpdateAdminUser stores for each groups
// and metadata value (sorted, repeats folded, canonical metadata, none
// as nil), and which values it refuses, naming the field, without
// writing anything.
func TestAdminUserGroupsRules(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, _ := ts.signIn("ann@example.com")
	id := l.User.ID
	seed := auth.UserAdminPatch{Groups: json.RawMessage(`["seed"]`), Metadata: json.RawMessage(`{"seed":1}`)}
	long := strings.Repeat("a", auth.MaxGroupLength)
	cases := []struct {
		name           string
		groups, meta   string // "" leaves the field out
		wantGroups     []string
		wantMeta       string // stored bytes, "" for nil
		wantErrContain string
	}{
		{"sorted, folded", `["b","a","b","a.b_c-d","0"]`, "", []string{"0", "a", "a.b_c-d", "b"}, `{"seed":1}`, ""},
		{"longest name", `["` + long + `"]`, "", []string{long}, `{"seed":1}`, ""},
		{"empty clears", `[]`, "", nil, `{"seed":1}`, ""},
		{"null clears", `null`, "", nil, `{"seed":1}`, ""},
		{"canonical metadata", "", "{ \"b\": [1, 2.50, 1e3], \"a\": {\"y\": \"<&>\", \"x\": null}, \"b\": \"last\" }", []string{"seed"},
			`{"a":{"x":null,"y":"<&>"},"b":"last"}`, ""},
		{"big numbers as written", "", `{"n":12345678901234567890123,"f":0.1000}`, []string{"seed"}, `{"f":0.1000,"n":12345678901234567890123}`, ""},
		{"empty object clears", "", `{}`, []string{"seed"}, "", ""},
		{"null metadata clears", "", `null`, []string{"seed"}, "", ""},
		{"a name too long", `["` + long + `a"]`, "", nil, "", "groups[0]"},
		{"capitals", `["Ops"]`, "", nil, "", `groups[0] "Ops" is not a group name`},
		{"underscore first", `["_x"]`, "", nil, "", `groups[0] "_x"`},
		{"a dot first", `["ok",".x"]`, "", nil, "", `groups[1] ".x"`},
		{"not an array", `"ops"`, "", nil, "", "groups must be an array"},
		{"too many", "[" + groupList(100) + `"g100"]`, "", nil, "", "groups has 101 different groups"},
		{"metadata an array", "", `[]`, nil, "", "metadata must be a JSON object"},
		{"metadata true", "", `true`, nil, "", "metadata must be a JSON object"},
		{"metadata too big", "", `{"k":"` + strings.Repeat("x", auth.MaxMetadataBytes-7) + `"}`, nil, "", "metadata takes 4097 bytes"},
	}
	for _, c := range cases {
		_, err := ts.UpdateAdminUser(ctx, id, seed)
		ok(t, err)
		var in auth.UserAdminPatch
		if c.groups != "" {
			in.Groups = json.RawMessage(c.groups)
		}
		if c.meta != "" {
			in.Metadata = json.RawMessage(c.meta)
		}
		_, err = ts.UpdateAdminUser(ctx, id, in)
		u := ts.user("ann@example.com")
		if c.wantErrContain != "" {
			e := wantErr(t, err, auth.ErrValidation, "")
			if !strings.Contains(e.Message, c.wantErrContain) {
				t.Fatalf("%s: %q, want it to say %q", c.name, e.Message, c.wantErrContain)
			}
			if !reflect.DeepEqual(u.Groups, []string{"seed"}) || string(u.Metadata) != `{"seed":1}` {
				t.Fatalf("%s: refused, yet stored %v %s", c.name, u.Groups, u.Metadata)
			}
			continue
		}
		ok(t, err)
		if !reflect.DeepEqual(u.Groups, c.wantGroups) || string(u.Metadata) != c.wantMeta || (c.wantMeta == "") != (u.Metadata == nil) {
			t.Fatalf("%s: stored %#v %q, want %#v %q", c.name, u.Groups, u.Metadata, c.wantGroups, c.wantMeta)
		}
	}
}

// groupList is n different group names, each followed by a comma.
func groupList(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"g%d",`, i)
	}
	return b.String()
}

// TestAdminUserPatch: a body with no field is refused; each field given
// changes, the others stay; the answer is the admin view ([] and {}
// when none); no webhook event is emitted; an unknown id is
// USER_NOT_FOUND; the user's own PATCH refuses groups and metadata,
// changing nothing (its first name included).
func TestAdminUserPatch(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, pr := ts.signIn("ann@example.com")
	id := l.User.ID
	_, err := ts.UpdateAdminUser(ctx, id, auth.UserAdminPatch{})
	wantErr(t, err, auth.ErrValidation, "")
	acme := "acme"
	v, err := ts.UpdateAdminUser(ctx, id, auth.UserAdminPatch{CompanyID: auth.NullableString{Set: true, Value: &acme}})
	ok(t, err)
	if v.Groups == nil || len(v.Groups) != 0 || string(v.Metadata) != "{}" || *v.CompanyID != "acme" {
		t.Fatalf("view %+v, want groups [] and metadata {}", v)
	}
	v, err = ts.UpdateAdminUser(ctx, id, auth.UserAdminPatch{Groups: json.RawMessage(`["staff"]`)})
	ok(t, err)
	if !reflect.DeepEqual(v.Groups, []string{"staff"}) || string(v.Metadata) != "{}" || *v.CompanyID != "acme" {
		t.Fatalf("after groups alone: %+v", v)
	}
	v, err = ts.UpdateAdminUser(ctx, id, auth.UserAdminPatch{Metadata: json.RawMessage(`{"plan":"pro"}`)})
	ok(t, err)
	if !reflect.DeepEqual(v.Groups, []string{"staff"}) || string(v.Metadata) != `{"plan":"pro"}` || *v.CompanyID != "acme" {
		t.Fatalf("after metadata alone: %+v", v)
	}
	if n := len(ts.outbox("user.updated")); n != 0 {
		t.Fatalf("%d user.updated events, want none", n)
	}
	_, err = ts.UpdateAdminUser(ctx, "nobody", auth.UserAdminPatch{Groups: json.RawMessage(`["a"]`)})
	wantErr(t, err, auth.ErrUserNotFound, "")

	for _, in := range []auth.UserPatch{
		{Groups: json.RawMessage(`["admins"]`)},
		{Metadata: json.RawMessage(`null`)},
		{FirstName: ptr("Ann"), Groups: json.RawMessage(`[]`)},
	} {
		_, err := ts.UpdateUser(ctx, pr, in, ts.meta)
		e := wantErr(t, err, auth.ErrValidation, "")
		if !strings.Contains(e.Message, "cannot be changed from the user's session") {
			t.Fatalf("UpdateUser(%+v): %q", in, e.Message)
		}
	}
	u := ts.user("ann@example.com")
	if !reflect.DeepEqual(u.Groups, []string{"staff"}) || string(u.Metadata) != `{"plan":"pro"}` || u.FirstName != "" {
		t.Fatalf("after the user's refused patches: %+v", u)
	}
	if got := auth.ViewAccount(u); !reflect.DeepEqual(got.Groups, []string{"staff"}) || string(got.Metadata) != `{"plan":"pro"}` {
		t.Fatalf("account view %+v", got)
	}
	if got := auth.ViewUser(&store.User{}); got.Groups == nil || string(got.Metadata) != "{}" {
		t.Fatalf("login view of a user without groups: %+v", got)
	}
}

// TestImportGroupsMetadata: an import line sets groups and metadata
// under the PATCH rules (stored sorted and canonical), a line without
// them keeps the user's, [] and {} clear them, a bad value rejects the
// line alone naming the field; the export shows them.
func TestImportGroupsMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	imp := func(lines ...string) *auth.ImportReport {
		t.Helper()
		rep, err := ts.ImportUsers(ctx, ts.project.ID, strings.NewReader(strings.Join(lines, "\n")+"\n"))
		ok(t, err)
		return rep
	}
	rep := imp(`{"email":"ann@example.com","groups":["b","a","b"],"metadata":{"z":1, "a":2}}`,
		`{"email":"bob@example.com","groups":["A"]}`,
		`{"email":"cy@example.com","metadata":"x"}`)
	if rep.Created != 1 || rep.RejectedCount != 2 || !strings.HasPrefix(rep.Rejected[0].Error, `groups[0] "A" is not a group name`) ||
		!strings.HasPrefix(rep.Rejected[1].Error, "metadata must be a JSON object") {
		t.Fatalf("report %+v", rep)
	}
	if u := ts.user("ann@example.com"); !reflect.DeepEqual(u.Groups, []string{"a", "b"}) || string(u.Metadata) != `{"a":2,"z":1}` {
		t.Fatalf("imported %v %s", u.Groups, u.Metadata)
	}
	imp(`{"email":"ann@example.com","firstName":"Ann"}`)
	if u := ts.user("ann@example.com"); !reflect.DeepEqual(u.Groups, []string{"a", "b"}) || string(u.Metadata) != `{"a":2,"z":1}` || u.FirstName != "Ann" {
		t.Fatalf("a line without them: %v %s %q", u.Groups, u.Metadata, u.FirstName)
	}
	var exported []auth.ExportUser
	ok(t, ts.ExportUsers(ctx, ts.project.ID, nil, func(u auth.ExportUser) error { exported = append(exported, u); return nil }))
	if len(exported) != 1 || !reflect.DeepEqual(exported[0].Groups, []string{"a", "b"}) || string(exported[0].Metadata) != `{"a":2,"z":1}` {
		t.Fatalf("exported %+v", exported)
	}
	imp(`{"email":"ann@example.com","groups":[],"metadata":{}}`)
	if u := ts.user("ann@example.com"); u.Groups != nil || u.Metadata != nil {
		t.Fatalf("cleared by [] and {}: %#v %q", u.Groups, u.Metadata)
	}
}
