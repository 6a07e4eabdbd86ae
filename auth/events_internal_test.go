package auth

import (
	"encoding/json"
	"testing"
)

// TestSignInEventData: the data of session.created and user.registered,
// encoded from structs inside the sign-in's transaction, are the bytes
// the maps they replaced gave (keys in name order, the same escaping),
// since webhook receivers may compare or sign them.
func TestSignInEventData(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got  any
		want map[string]string
	}{
		{sessionCreated{Method: "email_otp", SessionID: "0195f3a0-0000-7000-8000-000000000021", UserID: "0195f3a0-0000-7000-8000-000000000011"},
			map[string]string{"user_id": "0195f3a0-0000-7000-8000-000000000011", "session_id": "0195f3a0-0000-7000-8000-000000000021", "method": "email_otp"}},
		{sessionCreated{Method: "oidc:<app>&\"x\"\u2028", SessionID: "", UserID: "u"},
			map[string]string{"user_id": "u", "session_id": "", "method": "oidc:<app>&\"x\"\u2028"}},
		{userRegistered{Email: "ada+<x>@example.com", UserID: "u1"},
			map[string]string{"email": "ada+<x>@example.com", "user_id": "u1"}},
		{userRegistered{Email: "\xff\u00e9@example.com", UserID: ""},
			map[string]string{"email": "\xff\u00e9@example.com", "user_id": ""}},
	} {
		got, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("event data %s, want %s", got, want)
		}
	}
}
