package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"latchkey/webhook"
)

// A receiver checks each delivery over the raw body before decoding it.
func ExampleVerifyStandard() {
	secret := "9f86d081884c7d659a2feaa0c55ad015" // as returned at registration
	key := webhook.StandardKey(secret)           // "whsec_OWY4NmQw…", for Standard Webhooks libraries

	receive := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := webhook.VerifyStandard(key, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Or, with the service's own header:
		// webhook.Verify(secret, body, r.Header.Get("X-Service-Signature"))
		w.WriteHeader(http.StatusNoContent)
	}

	body := []byte(`{"id":"evt_1","type":"user.registered","created_at":"2025-01-02T03:04:05.000Z","data":{}}`)
	req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
	req.Header = webhook.Headers(secret, "evt_1", 1, time.Now(), body)
	rec := httptest.NewRecorder()
	receive(rec, req)
	fmt.Println(rec.Code)
	// Output: 204
}
