package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/webhook"
)

// The receiver functions below are docs/api.md's, verbatim
// (TestREADMESnippets checks it): a receiver needs nothing from latchkey.

// verify checks X-Service-Signature and returns the raw body. secret is
// the webhook's secret exactly as shown at creation (the hex string).
func verify(secret string, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Service-Signature"))) {
		return nil, errors.New("bad signature")
	}
	return body, nil // then dedupe on X-Service-Event-Id
}

// verifyStandard checks the Standard Webhooks headers of the same
// delivery: a timestamp within 5 minutes (replays) and the signature
// over "id.timestamp.body".
func verifyStandard(secret string, r *http.Request, body []byte) error {
	ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	if err != nil || math.Abs(float64(time.Now().Unix()-ts)) > 300 {
		return errors.New("missing or stale timestamp")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%s.%d.", r.Header.Get("webhook-id"), ts)
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("bad signature")
}

// A receiver checks each delivery over the raw body before decoding it.
// Here latchkey's own client posts a signed delivery to a local receiver
// built from docs/api.md's functions.
func Example_receiver() {
	secret := "9f86d081884c7d659a2feaa0c55ad015bf4f1b2b0b822cd15d6c15b0f00a08e4" // as returned at registration
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := verify(secret, r)
		if err == nil {
			err = verifyStandard(secret, r, body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Printf("%s %s\n", r.Header.Get("X-Service-Event-Id"), body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	body := []byte(`{"id":"evt_1","type":"user.registered","created_at":"2025-01-02T03:04:05.000Z","data":{"email":"a@example.com","user_id":"u1"}}`)
	ctx := webhook.WithAllowPrivate(context.Background(), true) // the receiver is on loopback
	ok := webhook.Post(ctx, webhook.NewClient(0), recv.URL, webhook.Headers(secret, "evt_1", 1, time.Now(), body), body)
	fmt.Println(ok.Status)
	tampered := bytes.Replace(body, []byte("a@example.com"), []byte("b@example.com"), 1)
	bad := webhook.Post(ctx, webhook.NewClient(0), recv.URL, webhook.Headers(secret, "evt_1", 1, time.Now(), body), tampered)
	fmt.Println(bad.Status)
	// Output:
	// evt_1 {"id":"evt_1","type":"user.registered","created_at":"2025-01-02T03:04:05.000Z","data":{"email":"a@example.com","user_id":"u1"}}
	// 204
	// 401
}

// A receiver using a Standard Webhooks library gives it StandardKey of the
// secret; VerifyStandard does what those libraries do.
func ExampleVerifyStandard() {
	secret := "9f86d081884c7d659a2feaa0c55ad015bf4f1b2b0b822cd15d6c15b0f00a08e4"
	key := webhook.StandardKey(secret) // "whsec_" + base64 of the secret's bytes
	body := []byte(`{"id":"evt_1","type":"user.deleted","created_at":"2025-01-02T03:04:05.000Z","data":{"user_id":"u1"}}`)
	h := webhook.Headers(secret, "evt_1", 1, time.Now(), body)
	fmt.Println(key == "whsec_"+base64.StdEncoding.EncodeToString([]byte(secret)))
	fmt.Println(webhook.VerifyStandard(key, h, body, time.Now(), 5*time.Minute))
	fmt.Println(webhook.VerifyStandard(key, h, body, time.Now().Add(time.Hour), 5*time.Minute))
	// Output:
	// true
	// <nil>
	// webhook: timestamp invalid or outside tolerance
}

// TestREADMESnippets: every Go block of the Webhooks section of the API
// reference (docs/api.md) is in this file verbatim, so it compiles and
// Example_receiver runs it.
func TestREADMESnippets(t *testing.T) {
	testkit.EngineFree(t, "compares the docs' snippets with the examples")
	readme, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "\n## Webhooks\n")
	if start < 0 {
		t.Fatal("docs/api.md has no Webhooks section")
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/api.md's Webhooks section has no Go snippet")
	}
	for _, b := range blocks {
		if !strings.Contains(string(self), b[1]) {
			t.Errorf("docs/api.md snippet is not in example_test.go verbatim:\n%s", b[1])
		}
	}
}
