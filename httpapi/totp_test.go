package httpapi_test

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boombuler/barcode/qr"
	ptotp "github.com/pquerna/otp/totp"

	"latchkey/store"
)

// totpCode is the 6-digit code of a base32 secret at the server clock
// plus offset steps, computed with pquerna/otp directly.
func (ts *testServer) totpCode(secret string, offset int) string {
	ts.t.Helper()
	c, err := ptotp.GenerateCode(secret, ts.Clock.Now().Add(time.Duration(offset)*30*time.Second))
	if err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// totpRow returns the stored TOTP factor row of userID as JSON, or nil.
func (ts *testServer) totpRow(userID string) []byte {
	ts.t.Helper()
	var raw []byte
	ts.DB.View(ctx, func(tx store.Tx) error {
		f, err := tx.Factor(userID, "totp")
		if err == nil {
			raw, _ = json.Marshal(f)
		}
		return nil
	})
	return raw
}

// totpEvents counts the TOTP events of action by failureCode ("" for a
// success), from the admin events API.
func (ts *testServer) totpEvents(action string) map[string]int {
	ts.t.Helper()
	return ts.methodEvents("totp", action)
}

func (ts *testServer) countOutbox(typ string) int {
	n := 0
	for _, t := range ts.outbox() {
		if t == typ {
			n++
		}
	}
	return n
}

// TestTOTPEnrollVerify walks the whole factor over HTTP: 404 before
// enrolment, enrol (URL, QR, secret), re-enrol while pending, first code
// enrolls, reuse, skew ±1 accepted and ±2 refused, 409 once enrolled,
// lockout after 10 failures and its expiry, the events and the outbox.
func TestTOTPEnrollVerify(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("ann@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	verify := func(code string) *response {
		return ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": code})
	}

	wantError(t, verify("123456"), 404, "TOTP_NOT_ENROLLED")

	r := ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
	wantOK(t, r)
	old := str(t, r.Body, "secret")
	checkEnrollment(t, r, "default", "ann@example.com")

	// Enrolling again while pending replaces the secret.
	r = ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
	wantOK(t, r)
	secret := str(t, r.Body, "secret")
	if secret == old {
		t.Fatal("re-enrolment returned the same secret")
	}
	if c := ts.totpCode(old, 0); c != ts.totpCode(secret, 0) {
		wantError(t, verify(c), 401, "VERIFICATION_FAILED")
	}

	// First correct code: pending → enrolled.
	code := ts.totpCode(secret, 0)
	r = verify(code)
	wantOK(t, r)
	if r.Body["enrolled"] != true {
		t.Fatalf("body=%s, want enrolled:true", r.Raw)
	}
	// The same code again is a reuse.
	wantError(t, verify(code), 401, "VERIFICATION_FAILED")
	wantError(t, ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{}), 409, "ALREADY_ENROLLED")

	// Skew: one step either side is accepted (each newer than the last).
	ts.Clock.Advance(time.Minute)
	for _, off := range []int{-1, 1} {
		r = verify(ts.totpCode(secret, off))
		wantOK(t, r)
		if r.Body["enrolled"] != true {
			t.Fatalf("step-up check body=%s", r.Raw)
		}
	}
	// Step +1 was accepted, so the current step is no longer new.
	wantError(t, verify(ts.totpCode(secret, 0)), 401, "VERIFICATION_FAILED")
	ts.Clock.Advance(5 * time.Minute)
	for _, off := range []int{-2, 2} {
		wantError(t, verify(ts.totpCode(secret, off)), 401, "VERIFICATION_FAILED")
	}

	// Lockout: 3 consecutive failures so far; 7 more make 10, then even
	// the right code fails with the same answer for 15 minutes.
	wrong := "000000"
	for _, off := range []int{-1, 0, 1} {
		if ts.totpCode(secret, off) == wrong {
			wrong = "999999"
		}
	}
	for i := 0; i < 7; i++ {
		wantError(t, verify(wrong), 401, "VERIFICATION_FAILED")
	}
	wantError(t, verify(ts.totpCode(secret, 0)), 401, "VERIFICATION_FAILED")
	ts.Clock.Advance(15*time.Minute - time.Second)
	wantError(t, verify(ts.totpCode(secret, 0)), 401, "VERIFICATION_FAILED")
	ts.Clock.Advance(time.Second)
	wantOK(t, verify(ts.totpCode(secret, 0)))

	if n := ts.countOutbox("totp.enrolled"); n != 1 {
		t.Fatalf("totp.enrolled in the outbox %d times, want 1", n)
	}
	want := map[string]int{"": 4, "invalid_code": 1 + 2 + 7, "already_used": 2, "rate_limited": 2, "user_not_found": 1}
	if got := ts.totpEvents("verify"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verify events %v, want %v", got, want)
	}
	if got := ts.totpEvents("enroll"); got[""] != 2 || got["validation_error"] != 1 || len(got) != 2 {
		t.Fatalf("enroll events %v", got)
	}
	r = ts.admin("GET", "/api/v1/admin/events?failureCode=rate_limited", nil)
	if evs := r.Body["events"].([]any); len(evs) != 2 || evs[0].(map[string]any)["userId"] != uid {
		t.Fatalf("rate_limited events: %s", r.Raw)
	}
}

// checkEnrollment checks an enrol response: the otpauth URL names issuer
// and account and carries the returned secret with SHA-1, 6 digits and
// 30 s; the QR code is a 256×256 PNG of exactly that URL.
func checkEnrollment(t *testing.T, r *response, issuer, account string) {
	t.Helper()
	raw, secret, qrURL := str(t, r.Body, "otpauthUrl"), str(t, r.Body, "secret"), str(t, r.Body, "qrCodeDataUrl")
	if b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret); err != nil || len(b) != 20 {
		t.Fatalf("secret %q is not 20 bytes of base32 (%v)", secret, err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/"+issuer+":"+account {
		t.Fatalf("otpauthUrl %s", raw)
	}
	q := u.Query()
	for k, want := range map[string]string{"secret": secret, "issuer": issuer, "algorithm": "SHA1", "digits": "6", "period": "30"} {
		if q.Get(k) != want {
			t.Fatalf("otpauthUrl %s: %s=%q, want %q", raw, k, q.Get(k), want)
		}
	}
	b64, ok := strings.CutPrefix(qrURL, "data:image/png;base64,")
	if !ok {
		t.Fatalf("qrCodeDataUrl starts %.30q", qrURL)
	}
	pngData, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 256 {
		t.Fatalf("QR image %v, want 256×256", b)
	}
	if got := scanQR(t, img, raw); got != raw {
		t.Fatalf("QR holds %q, want %q", got, raw)
	}
}

// scanQR reads the module grid out of img (the code is the bounding box
// of its dark pixels, which the finder patterns reach on every side) and
// returns want when the grid is exactly the QR code (level M) of want,
// else a description of the first difference.
func scanQR(t *testing.T, img image.Image, want string) string {
	t.Helper()
	ref, err := qr.Encode(want, qr.M, qr.Auto)
	if err != nil {
		t.Fatal(err)
	}
	dark := func(im image.Image, x, y int) bool {
		r, g, b, _ := im.At(x, y).RGBA()
		return r+g+b < 3*0x8000
	}
	b := img.Bounds()
	box := image.Rectangle{Min: b.Max, Max: b.Min}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if dark(img, x, y) {
				box.Min.X, box.Min.Y = min(box.Min.X, x), min(box.Min.Y, y)
				box.Max.X, box.Max.Y = max(box.Max.X, x+1), max(box.Max.Y, y+1)
			}
		}
	}
	n := ref.Bounds().Dx()
	if box.Dx() != box.Dy() || box.Dx()%n != 0 {
		return fmt.Sprintf("code box %v is not %d whole modules", box, n)
	}
	px := box.Dx() / n
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if dark(img, box.Min.X+x*px+px/2, box.Min.Y+y*px+px/2) != dark(ref, x, y) {
				return fmt.Sprintf("module (%d,%d) differs", x, y)
			}
		}
	}
	return want
}

// TestTOTPIssuerIsProjectName: another project's name and the user's
// email label the URL; a name with characters that mean something in a
// URL reads back whole, and the QR code carries the same URL.
func TestTOTPIssuerIsProjectName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Acme Shop", "R&D + Co", "Smith & Sons / #1? 100% =ok", "Zürich — 東京"} {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": name})
			wantOK(t, r)
			key := ts.createKey(map[string]any{"projectId": str(t, obj(t, r.Body, "project"), "id"), "mode": "test"})
			ts.Key = key
			tok := str(t, ts.login("bo.b+x@example.com").Body, "token")
			r = ts.do("POST", "/api/v1/totp/enroll", tok, nil)
			wantOK(t, r)
			checkEnrollment(t, r, name, "bo.b+x@example.com")
		})
	}
}

// TestTOTPBadInput: malformed bodies and codes get the envelope and
// change nothing: the factor row is byte for byte the same, and the
// right code still verifies afterwards.
func TestTOTPBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("cy@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	r := ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
	wantOK(t, r)
	secret := str(t, r.Body, "secret")
	before := ts.totpRow(uid)

	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"missing code", `{}`, 400, "VALIDATION_ERROR"},
		{"empty body", ``, 400, "VALIDATION_ERROR"},
		{"empty code", `{"code":""}`, 400, "VALIDATION_ERROR"},
		{"null code", `{"code":null}`, 400, "VALIDATION_ERROR"},
		{"number", `{"code":123456}`, 400, "VALIDATION_ERROR"},
		{"array", `{"code":["123456"]}`, 400, "VALIDATION_ERROR"},
		{"object", `{"code":{"v":"123456"}}`, 400, "VALIDATION_ERROR"},
		{"bool", `{"code":true}`, 400, "VALIDATION_ERROR"},
		{"letters", `{"code":"12ab56"}`, 400, "VALIDATION_ERROR"},
		{"leading space", `{"code":" 123456"}`, 400, "VALIDATION_ERROR"},
		{"inner space", `{"code":"123 456"}`, 400, "VALIDATION_ERROR"},
		{"newline", `{"code":"123456\n"}`, 400, "VALIDATION_ERROR"},
		{"arabic-indic digits", `{"code":"١٢٣٤٥٦"}`, 400, "VALIDATION_ERROR"},
		{"fullwidth digits", `{"code":"１２３４５６"}`, 400, "VALIDATION_ERROR"},
		{"minus", `{"code":"-12345"}`, 400, "VALIDATION_ERROR"},
		{"huge string", `{"code":"` + strings.Repeat("1", 5000) + `"}`, 400, "VALIDATION_ERROR"},
		{"too large", `{"code":"` + strings.Repeat("1", 70000) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"not json", `code=123456`, 400, "VALIDATION_ERROR"},
		{"json array", `["123456"]`, 400, "VALIDATION_ERROR"},
		{"two objects", `{"code":"1"}{"code":"2"}`, 400, "VALIDATION_ERROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/totp/verify", tok, c.body), c.status, c.code)
			if after := ts.totpRow(uid); !bytes.Equal(after, before) {
				t.Fatalf("factor changed:\n%s\n%s", before, after)
			}
		})
	}
	for _, c := range []struct {
		name string
		body any
	}{{"array", `[]`}, {"not json", `{`}, {"string", `"x"`}} {
		t.Run("enroll "+c.name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/totp/enroll", tok, c.body), 400, "VALIDATION_ERROR")
			if after := ts.totpRow(uid); !bytes.Equal(after, before) {
				t.Fatal("factor changed")
			}
		})
	}
	// No or the wrong kind of credential.
	for _, cred := range []string{"", ts.Key, "not-a-token"} {
		wantError(t, ts.do("POST", "/api/v1/totp/enroll", cred, map[string]any{}), 401, "INVALID_SESSION")
		wantError(t, ts.do("POST", "/api/v1/totp/verify", cred, map[string]any{"code": "123456"}), 401, "INVALID_SESSION")
	}
	if !bytes.Equal(ts.totpRow(uid), before) {
		t.Fatal("factor changed")
	}
	// Digits of the wrong length are a wrong code (401, counted).
	for _, c := range []string{"12345", "1234567", "0"} {
		wantError(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": c}), 401, "VERIFICATION_FAILED")
	}
	if got := ts.totpEvents("verify"); got["invalid_code"] != 3 || got["validation_error"] != 12 {
		t.Fatalf("events %v: want 12 validation_error (decoded bodies with a bad code) and 3 invalid_code", got)
	}
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(secret, 0)}))
	// A disabled user's session is gone.
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/disable", nil))
	wantError(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(secret, 1)}), 401, "INVALID_SESSION")
}

// TestTOTPConcurrentSameCode: one code sent many times at once is
// accepted exactly once.
func TestTOTPConcurrentSameCode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("dee@example.com").Body, "token")
	r := ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
	wantOK(t, r)
	body := fmt.Sprintf(`{"code":%q}`, ts.totpCode(str(t, r.Body, "secret"), 0))
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", ts.URL+"/api/v1/totp/verify", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	wg.Wait()
	ok, failed := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 401:
			failed++
		}
	}
	if ok != 1 || failed != n-1 {
		t.Fatalf("statuses %v: want one 200 and %d 401", statuses, n-1)
	}
	if c := ts.countOutbox("totp.enrolled"); c != 1 {
		t.Fatalf("totp.enrolled %d times", c)
	}
}
