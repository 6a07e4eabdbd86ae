package auth

import (
	"bytes"
	"encoding/base32"
	"testing"
	"time"

	"latchkey/auth/totp"
	"latchkey/store"
	"latchkey/store/storetest"
)

// totpFixture is a Service on a real data file with one signed-in user
// and a settable clock; no HTTP.
type totpFixture struct {
	t   *testing.T
	svc *Service
	db  store.DB
	now time.Time
	pr  *Principal
	u   *store.User
}

func newTOTPFixture(t *testing.T) *totpFixture {
	t.Helper()
	f := &totpFixture{t: t, now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	db := storetest.Open(t) // checked when the test ends
	keys, err := store.NewKeyring(bytes.Repeat([]byte{9}, store.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	f.db = db
	f.svc, err = New(db, keys, Config{AdminToken: "adm_x", Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.svc.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.u, f.pr = f.signIn(b.Project, "totp@example.com")
	return f
}

// signIn creates a user of p with a live session.
func (f *totpFixture) signIn(p *store.Project, email string) (*store.User, *Principal) {
	var u *store.User
	var sess *store.Session
	err := f.db.Update(ctx, func(tx store.Tx) error {
		var err error
		if u, _, err = f.svc.provenUser(tx, p, email); err != nil {
			return err
		}
		sess = f.svc.newSession(p, u, "email_otp")
		return tx.PutSession(sess)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return u, &Principal{SessionID: sess.ID, UserID: u.ID, ProjectID: p.ID}
}

// putSecret stores secret as the user's pending TOTP factor, sealed as
// EnrollTOTP seals it.
func (f *totpFixture) putSecret(secret []byte) {
	f.t.Helper()
	sealed, err := f.svc.keys.Seal(secret, totpAAD(f.u.ID))
	if err != nil {
		f.t.Fatal(err)
	}
	err = f.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: f.u.ID, ProjectID: f.u.ProjectID, Kind: "totp", Status: "pending", Secret: sealed, CreatedAt: f.now})
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// putEnrolled stores secret as the user's enrolled TOTP factor.
func (f *totpFixture) putEnrolled(secret []byte) {
	f.t.Helper()
	f.putSecret(secret)
	err := f.db.Update(ctx, func(tx store.Tx) error {
		fa, err := tx.Factor(f.u.ID, "totp")
		if err != nil {
			return err
		}
		fa.Status, fa.EnrolledAt = "enrolled", &f.now
		return tx.PutFactor(fa)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *totpFixture) factor() *store.Factor {
	f.t.Helper()
	var fa *store.Factor
	err := f.db.View(ctx, func(tx store.Tx) error {
		var err error
		fa, err = tx.Factor(f.u.ID, "totp")
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return fa
}

// code returns the 6-digit code of secret at the clock's step + offset.
func (f *totpFixture) code(secret []byte, offset int64) string {
	f.t.Helper()
	c, err := totp.Code(secret, totp.Step(f.now)+offset, totp.Digits)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// categories counts the failure codes of the TOTP events, "" for successes.
func (f *totpFixture) categories(action string) map[string]int {
	out := map[string]int{}
	f.db.View(ctx, func(tx store.Tx) error {
		evs, _, err := tx.AuthEvents(store.AuthEventFilter{})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range evs {
			if e.Method == "totp" && e.Action == action {
				if e.Success != (e.FailureCode == "") || e.UserID != f.u.ID {
					f.t.Fatalf("event %+v", e)
				}
				out[e.FailureCode]++
			}
		}
		return nil
	})
	return out
}

func (f *totpFixture) outbox(typ string) int {
	n := 0
	f.db.View(ctx, func(tx store.Tx) error {
		evs, _ := tx.EventsAfter(0, 1<<20)
		for _, e := range evs {
			if e.Type == typ {
				n++
			}
		}
		return nil
	})
	return n
}

// wantErr fails unless err is an *Error with code and category.
func wantErr(t *testing.T, err error, code, category string) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("err=%v (%T), want %s/%s", err, err, code, category)
	}
	if e.Code != code || e.Category != category {
		t.Fatalf("err=%s/%s, want %s/%s", e.Code, e.Category, code, category)
	}
}

// TestVerifyTOTPRFC6238 runs RFC 6238 Appendix B's SHA-1 vectors through
// VerifyTOTP with the service clock set to each time: the last 6 digits
// verify, and the same code again is already_used.
func TestVerifyTOTPRFC6238(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	f.putSecret([]byte("12345678901234567890"))
	for _, v := range []struct {
		unix int64
		code string
	}{
		{59, "94287082"},
		{1111111109, "07081804"},
		{1111111111, "14050471"},
		{1234567890, "89005924"},
		{2000000000, "69279037"},
		{20000000000, "65353130"},
	} {
		f.now = time.Unix(v.unix, 0).UTC()
		code := v.code[len(v.code)-6:]
		if err := f.svc.VerifyTOTP(ctx, f.pr, code, Meta{}); err != nil {
			t.Fatalf("T=%d code %s: %v", v.unix, code, err)
		}
		if got := f.factor().LastStep; got != v.unix/30 {
			t.Fatalf("T=%d: last step %d, want %d", v.unix, got, v.unix/30)
		}
		wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, code, Meta{}), "VERIFICATION_FAILED", CatAlreadyUsed)
	}
	// The last reuse counted as one failure.
	if fa := f.factor(); fa.Status != "enrolled" || fa.EnrolledAt == nil || !fa.EnrolledAt.Equal(time.Unix(59, 0)) || fa.Failures != 1 {
		t.Fatalf("factor %+v", fa)
	}
	if n := f.outbox("totp.enrolled"); n != 1 {
		t.Fatalf("totp.enrolled events=%d, want 1", n)
	}
	if c := f.categories("verify"); c[""] != 6 || c[CatAlreadyUsed] != 6 || len(c) != 2 {
		t.Fatalf("categories=%v", c)
	}
}

func TestEnrollTOTP(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	e1, err := f.svc.EnrollTOTP(ctx, f.pr, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	first := f.factor()
	if first.Status != "pending" || bytes.Contains(first.Secret, []byte(e1.Secret)) {
		t.Fatalf("factor %+v", first)
	}
	// Re-enrolling while pending replaces the secret: the first one's
	// codes no longer verify.
	e2, err := f.svc.EnrollTOTP(ctx, f.pr, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if e2.Secret == e1.Secret || e2.OtpauthURL == e1.OtpauthURL {
		t.Fatal("re-enrolment kept the secret")
	}
	s1, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(e1.Secret)
	s2, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(e2.Secret)
	if bytes.Contains(first.Secret, s1) {
		t.Fatal("stored secret holds the raw secret")
	}
	opened, err := f.svc.keys.Open(f.factor().Secret, totpAAD(f.u.ID))
	if err != nil || !bytes.Equal(opened, s2) || len(s2) != 20 {
		t.Fatalf("stored secret does not open to the second one (%v)", err)
	}
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(s1, 0), Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
	if err := f.svc.VerifyTOTP(ctx, f.pr, f.code(s2, 0), Meta{}); err != nil {
		t.Fatal(err)
	}
	before := f.factor()
	wantErr(t, func() error { _, err := f.svc.EnrollTOTP(ctx, f.pr, Meta{}); return err }(), "ALREADY_ENROLLED", CatValidation)
	if fa := f.factor(); !bytes.Equal(fa.Secret, before.Secret) || fa.Status != "enrolled" || fa.LastStep != before.LastStep {
		t.Fatal("409 changed the factor")
	}
	if c := f.categories("enroll"); c[""] != 2 || c[CatValidation] != 1 {
		t.Fatalf("enroll categories=%v", c)
	}
}

func TestVerifyTOTPNotEnrolledAndBadInput(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, "123456", Meta{}), "TOTP_NOT_ENROLLED", CatUserNotFound)
	secret := bytes.Repeat([]byte{1}, 20)
	f.putSecret(secret)
	for _, bad := range []string{"", "12a456", " 123456", "123456 ", "١٢٣٤٥٦", "１２３４５６", "12345\n", "12345678901234567"} {
		wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, bad, Meta{}), "VALIDATION_ERROR", CatValidation)
	}
	if fa := f.factor(); fa.Failures != 0 || fa.Status != "pending" {
		t.Fatalf("bad input changed the factor: %+v", fa)
	}
	// Digits of the wrong length are a wrong code and count.
	for _, c := range []string{"12345", "1234567"} {
		wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, c, Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
	}
	if n := f.factor().Failures; n != 2 {
		t.Fatalf("failures=%d, want 2", n)
	}
	if c := f.categories("verify"); c[CatUserNotFound] != 1 || c[CatValidation] != 8 || c[CatInvalidCode] != 2 {
		t.Fatalf("categories=%v", c)
	}
}

// TestVerifyTOTPSkewAndLockout: ±1 step accepted, ±2 not; ten failures
// lock for 15 minutes even for a right code; expiry and success reset.
func TestVerifyTOTPSkewAndLockout(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	secret := bytes.Repeat([]byte{2}, 20)
	f.putSecret(secret)
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, -2), Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 2), Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
	if err := f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, -1), Meta{}); err != nil {
		t.Fatal(err)
	}
	if f.factor().Failures != 0 {
		t.Fatal("success did not reset the failure count")
	}
	if err := f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 1), Meta{}); err != nil {
		t.Fatal(err)
	}
	// Step +1 was accepted: the current step is now older and fails.
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}), "VERIFICATION_FAILED", CatAlreadyUsed)

	f.now = f.now.Add(time.Minute)
	wrong := "000000"
	if f.code(secret, 0) == wrong || f.code(secret, 1) == wrong || f.code(secret, -1) == wrong {
		wrong = "999999"
	}
	for i := 1; i < TOTPMaxFailures; i++ { // one failure (already_used) counted above
		wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, wrong, Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
	}
	locked := f.factor()
	if locked.Failures != TOTPMaxFailures || !locked.LockedUntil.Equal(f.now.Add(TOTPLockout)) {
		t.Fatalf("after 10 failures: %+v", locked)
	}
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}), "VERIFICATION_FAILED", CatRateLimited)
	f.now = f.now.Add(TOTPLockout - time.Second)
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}), "VERIFICATION_FAILED", CatRateLimited)
	if fa := f.factor(); fa.Failures != TOTPMaxFailures || !fa.LockedUntil.Equal(locked.LockedUntil) || fa.LastStep != locked.LastStep {
		t.Fatalf("tries during the lockout changed the factor: %+v", fa)
	}
	f.now = f.now.Add(time.Second)
	if err := f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
	if fa := f.factor(); fa.Failures != 0 || !fa.LockedUntil.IsZero() {
		t.Fatalf("success did not reset: %+v", fa)
	}
	if c := f.categories("verify"); c[CatRateLimited] != 2 || c[CatInvalidCode] != 2+TOTPMaxFailures-1 || c[CatAlreadyUsed] != 1 || c[""] != 3 {
		t.Fatalf("categories=%v", c)
	}
}

// TestTOTPSecretBoundToUser: a sealed secret copied onto another user's
// factor does not open (associated data), and the try is an
// internal_error event, not a pass.
func TestTOTPSecretBoundToUser(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	if _, err := f.svc.EnrollTOTP(ctx, f.pr, Meta{}); err != nil {
		t.Fatal(err)
	}
	sealed := f.factor().Secret
	p, _ := f.svc.project(ctx, f.u.ProjectID)
	f.u, f.pr = f.signIn(p, "other@example.com")
	err := f.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: f.u.ID, ProjectID: f.u.ProjectID, Kind: "totp", Status: "enrolled", Secret: sealed, CreatedAt: f.now})
	})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, "123456", Meta{}), "INTERNAL_ERROR", CatInternal)
	if c := f.categories("verify"); c[CatInternal] != 1 {
		t.Fatalf("categories=%v", c)
	}
}
