package sms

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTwilioErrorsHoldNoCredentials: transport failures and Twilio error
// bodies (which may echo the account) reach the caller without the
// account SID or auth token.
func TestTwilioErrorsHoldNoCredentials(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		w.WriteHeader(401)
		w.Write([]byte(`{"code": 20003, "message": "Authenticate ` + u + ` ` + p + `", "status": 401}`))
	}))
	defer echo.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for name, base := range map[string]string{"error body": echo.URL + "/", "connection refused": closed} {
		t.Run(name, func(t *testing.T) {
			tw, err := NewTwilio("ACsecretsid", "secret-token", "+15550001111", base)
			if err != nil {
				t.Fatal(err)
			}
			err = tw.SendSMS(context.Background(), "+15551234567", "hi")
			if err == nil {
				t.Fatal("send succeeded")
			}
			if strings.Contains(err.Error(), "ACsecretsid") || strings.Contains(err.Error(), "secret-token") {
				t.Fatalf("credentials in %q", err)
			}
		})
	}
}
