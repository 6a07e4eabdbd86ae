package webhook

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testSecret is shaped like a webhook secret: a hex string.
const testSecret = "3c1f0e8a9b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e"

func TestSign(t *testing.T) {
	// HMAC-SHA256 test vector (key "key").
	got := Sign("key", []byte("The quick brown fox jumps over the lazy dog"))
	want := "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	if got != want {
		t.Fatalf("Sign=%s, want %s", got, want)
	}
	if !Verify("key", []byte("The quick brown fox jumps over the lazy dog"), strings.ToUpper(want)) {
		t.Fatal("Verify refused the upper-case signature")
	}
	if Verify("key", []byte("The quick brown fox jumps over the lazy cat"), want) {
		t.Fatal("Verify accepted a signature of another body")
	}
	if Verify("key", nil, "not hex") {
		t.Fatal("Verify accepted a non-hex signature")
	}
}

// The Standard Webhooks reference vector.
func TestStandardSignature(t *testing.T) {
	const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const id, ts = "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330
	body := []byte(`{"test": 2432232314}`)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	if got := StandardSignature(k, id, ts, body); got != want {
		t.Fatalf("StandardSignature=%s, want %s", got, want)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", want)
	if err := VerifyStandard(key, h, body, time.Unix(ts, 0), 0); err != nil {
		t.Fatalf("VerifyStandard: %v", err)
	}
}

func TestHeaders(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"user.registered","created_at":"2025-01-02T03:04:05.000Z","data":{}}`)
	ts := time.Unix(1700000000, 0)
	h := Headers(testSecret, "evt_1", 3, ts, body)

	for name, want := range map[string]string{
		"Content-Type":               "application/json",
		"User-Agent":                 "latchkey-webhook/1",
		"X-Service-Signature":        Sign(testSecret, body),
		"X-Service-Event-Id":         "evt_1",
		"X-Service-Delivery-Attempt": "3",
		"webhook-id":                 "evt_1",
		"webhook-timestamp":          "1700000000",
		"webhook-signature":          StandardSignature([]byte(testSecret), "evt_1", 1700000000, body),
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s=%q, want %q", name, got, want)
		}
	}

	// A receiver's Standard Webhooks library is given whsec_ + base64 of the
	// secret's ASCII bytes.
	if err := VerifyStandard(StandardKey(testSecret), h, body, ts, 0); err != nil {
		t.Fatalf("VerifyStandard(StandardKey(secret)): %v", err)
	}
	manual := "whsec_" + base64.StdEncoding.EncodeToString([]byte(testSecret))
	if err := VerifyStandard(manual, h, body, ts, 0); err != nil {
		t.Fatalf("VerifyStandard(%s): %v", manual, err)
	}
	// The hex-decoded secret is not the key.
	decoded, _ := hex.DecodeString(testSecret)
	wrong := "whsec_" + base64.StdEncoding.EncodeToString(decoded)
	if err := VerifyStandard(wrong, h, body, ts, 0); !errors.Is(err, ErrSignature) {
		t.Fatalf("VerifyStandard with the decoded secret: %v, want ErrSignature", err)
	}
}

func TestVerifyStandard(t *testing.T) {
	body := []byte(`{"id":"evt_2"}`)
	ts := time.Unix(1700000000, 0)
	key := StandardKey(testSecret)
	good := Headers(testSecret, "evt_2", 1, ts, body)
	sig := good.Get("webhook-signature")

	with := func(name, value string) http.Header {
		h := good.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	tests := []struct {
		name   string
		key    string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"good", key, good, string(body), ts, nil},
		{"no prefix", strings.TrimPrefix(key, "whsec_"), good, string(body), ts, nil},
		{"within tolerance", key, good, string(body), ts.Add(5 * time.Minute), nil},
		{"several signatures", key, with("webhook-signature", "v1,AAAA "+sig+" v2,x"), string(body), ts, nil},
		{"tampered body", key, good, `{"id":"evt_3"}`, ts, ErrSignature},
		{"other id", key, with("webhook-id", "evt_9"), string(body), ts, ErrSignature},
		{"other timestamp", key, with("webhook-timestamp", "1700000001"), string(body), ts, ErrSignature},
		{"bare signature", key, with("webhook-signature", strings.TrimPrefix(sig, "v1,")), string(body), ts, ErrSignature},
		{"replayed", key, good, string(body), ts.Add(5*time.Minute + time.Second), ErrTimestamp},
		{"from the future", key, good, string(body), ts.Add(-6 * time.Minute), ErrTimestamp},
		{"bad timestamp", key, with("webhook-timestamp", "soon"), string(body), ts, ErrTimestamp},
		{"huge timestamp", key, with("webhook-timestamp", "-9223372036854775808"), string(body), ts, ErrTimestamp},
		{"no id", key, with("webhook-id", ""), string(body), ts, ErrMissingHeader},
		{"no signature", key, with("webhook-signature", ""), string(body), ts, ErrMissingHeader},
		{"bad key", "whsec_!!!", good, string(body), ts, ErrInvalidKey},
		{"empty key", "whsec_", good, string(body), ts, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyStandard(tt.key, tt.header, []byte(tt.body), tt.now, 0)
			if err != tt.want {
				t.Fatalf("VerifyStandard=%v, want %v", err, tt.want)
			}
		})
	}
}
