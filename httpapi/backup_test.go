package httpapi_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// backupShape is two groups of 5 uppercase letters and digits without
// the look-alikes 0, O, 1, I and L.
var backupShape = regexp.MustCompile(`^[A-HJKMNP-Z2-9]{5}-[A-HJKMNP-Z2-9]{5}$`)

func (ts *testServer) backupCodes(tok string) []string {
	ts.t.Helper()
	r := ts.do("POST", "/api/v1/backup-codes/generate", tok, map[string]any{})
	wantOK(ts.t, r)
	var codes []string
	for _, c := range r.Body["codes"].([]any) {
		codes = append(codes, c.(string))
	}
	return codes
}

func TestBackupCodes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("k@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	codes := ts.backupCodes(tok)
	if len(codes) != 10 {
		t.Fatalf("%d codes, want 10", len(codes))
	}
	for _, c := range codes {
		if !backupShape.MatchString(c) {
			t.Fatalf("code %q is not XXXXX-XXXXX", c)
		}
	}
	r := ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "k@example.com", "code": strings.ToLower(strings.Replace(codes[0], "-", "", 1))})
	wantOK(t, r)
	if r.Body["userId"] != uid {
		t.Fatalf("userId=%v", r.Body["userId"])
	}
	wantLoginUser(t, r.Body, "k@example.com")
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	// Used code fails.
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "k@example.com", "code": codes[0]}), 401, "INVALID_CODE")
	// A new batch invalidates the old one at once.
	fresh := ts.backupCodes(tok)
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "k@example.com", "code": codes[1]}), 401, "INVALID_CODE")
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "k@example.com", "code": fresh[1]}))
	types := ts.outbox()
	n := 0
	for _, ty := range types {
		if ty == "backup_codes.generated" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("backup_codes.generated events=%d, want 2", n)
	}
}

// TestBackupCodeAlphabet: generated codes never hold 0, O, 1, I or L,
// and every other character of A-Z and 2-9 turns up.
func TestBackupCodeAlphabet(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("alpha@example.com").Body, "token")
	seen := map[rune]bool{}
	for range 20 {
		for _, c := range ts.backupCodes(tok) {
			if !backupShape.MatchString(c) {
				t.Fatalf("code %q is not XXXXX-XXXXX over A-Z and 2-9 without O, I, L", c)
			}
			for _, r := range strings.ReplaceAll(c, "-", "") {
				seen[r] = true
			}
		}
	}
	// 2,000 draws from 31 characters: each turns up but for a chance
	// of about 31·e^-65.6.
	if len(seen) != 31 {
		t.Fatalf("%d distinct characters in 2,000, want all 31", len(seen))
	}
}

// TestBackupCodeOldAlphabet: a batch generated before the look-alike-free
// alphabet (codes holding 0, O, 1, I and L, stored as keyed hashes of the
// uppercase code without its hyphen) still verifies, in any case and
// with or without the hyphen; a look-alike is not taken for its twin.
func TestBackupCodeOldAlphabet(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("old@example.com")
	uid := str(t, login.Body, "userId")
	old := []string{"O0I1L-ABCDE", "LLLLL-00000", "1I1I1-OOOOO"}
	b := &store.BackupCodes{UserID: uid, ProjectID: ts.Project.ID, Used: make([]bool, len(old)), CreatedAt: ts.Clock.Now()}
	for _, c := range old {
		h := ts.Keys.HashString("backup", uid+"\x00"+strings.ReplaceAll(c, "-", ""))
		b.Hashes = append(b.Hashes, h[:])
	}
	if err := ts.DB.Update(ctx, func(tx store.Tx) error { return tx.PutBackupCodes(b) }); err != nil {
		t.Fatal(err)
	}
	verify := func(code string) *response {
		return ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "old@example.com", "code": code})
	}
	// O read as 0 and I as 1 is another code.
	wantError(t, verify("00I1L-ABCDE"), 401, "INVALID_CODE")
	wantError(t, verify("O011L-ABCDE"), 401, "INVALID_CODE")
	for _, c := range []string{"O0I1L-ABCDE", "lllll00000", "1i1I1-ooOOo"} {
		r := verify(c)
		wantOK(t, r)
		if r.Body["userId"] != uid {
			t.Fatalf("%s: userId=%v, want %s", c, r.Body["userId"], uid)
		}
	}
}

func TestBackupCodeByExternalID(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "x@example.com"}))
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "x@example.com", "code": ts.lastMail("x@example.com").Code, "externalUserId": "u-42"})
	wantOK(t, r)
	codes := ts.backupCodes(str(t, r.Body, "token"))
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"externalUserId": "u-42", "code": codes[3]}))
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"externalUserId": "u-43", "code": codes[4]}), 401, "INVALID_CODE")
}

func TestBackupCodeBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	codes := ts.backupCodes(str(t, ts.login("b@example.com").Body, "token"))
	for name, body := range map[string]any{
		"both":             map[string]any{"email": "b@example.com", "externalUserId": "x", "code": codes[0]},
		"both, one empty":  map[string]any{"email": "b@example.com", "externalUserId": "", "code": codes[0]},
		"neither":          map[string]any{"code": codes[0]},
		"both null":        map[string]any{"email": nil, "externalUserId": nil, "code": codes[0]},
		"empty code":       map[string]any{"email": "b@example.com", "code": ""},
		"no code":          map[string]any{"email": "b@example.com"},
		"code type":        map[string]any{"email": "b@example.com", "code": 12345},
		"spaces around":    map[string]any{"email": "b@example.com", "code": " " + codes[0] + " "},
		"space inside":     map[string]any{"email": "b@example.com", "code": strings.Replace(codes[0], "-", " ", 1)},
		"unicode":          map[string]any{"email": "b@example.com", "code": "ÄBCDE-12345"},
		"fullwidth digits": map[string]any{"email": "b@example.com", "code": "１２３４５-６７８９０"},
		"huge":             map[string]any{"email": "b@example.com", "code": strings.Repeat("A", 10_000)},
		"bad email":        map[string]any{"email": "nope", "code": codes[0]},
		"empty external":   map[string]any{"externalUserId": "", "code": codes[0]},
		"malformed":        "{",
		"not an object":    `["b@example.com"]`,
		"external type":    map[string]any{"externalUserId": 5, "code": codes[0]},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, body), 400, "VALIDATION_ERROR")
		})
	}
	// None of that counted as a failure, and nothing was consumed: four
	// wrong codes (well-formed or not) are 401s, then the code works.
	for _, wrong := range []string{"AAAAA-AAAAA", "aaaaaaaaaa", "WRONG", "INVALID-CODE"} {
		wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "b@example.com", "code": wrong}), 401, "INVALID_CODE")
	}
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "B@Example.com", "code": codes[0]}))
	// A null field counts as absent.
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": nil, "externalUserId": "nobody", "code": codes[1]}), 401, "INVALID_CODE")
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "nobody@example.com", "code": codes[1]}), 401, "INVALID_CODE")
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "b@example.com", "code": codes[0]}), 401, "INVALID_CODE")
	cats := eventCategories(ts)
	if cats["invalid_code"] != 4 || cats["user_not_found"] != 2 || cats["already_used"] != 1 {
		t.Fatalf("categories=%v", cats)
	}
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", "", map[string]any{"email": "b@example.com", "code": codes[2]}), 401, "MISSING_API_KEY")
	wantError(t, ts.do("POST", "/api/v1/backup-codes/generate", ts.Key, map[string]any{}), 401, "INVALID_SESSION")
}

func TestBackupCodeLockout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	codes := ts.backupCodes(str(t, ts.login("l@example.com").Body, "token"))
	for i := 0; i < 5; i++ {
		wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "l@example.com", "code": "AAAAA-AAAAA"}), 401, "INVALID_CODE")
	}
	// From the 6th try on: 429, even for a right code (not consumed),
	// until the first failure leaves the 15-minute window.
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "l@example.com", "code": codes[0]}), 429, "TOO_MANY_ATTEMPTS")
	ts.Clock.Advance(15*time.Minute - time.Second)
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "l@example.com", "code": codes[0]}), 429, "TOO_MANY_ATTEMPTS")
	ts.Clock.Advance(time.Second)
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "l@example.com", "code": codes[0]}))
	if eventCategories(ts)["rate_limited"] != 2 {
		t.Fatal("lockout not recorded as rate_limited")
	}
}

func TestBackupCodeDoubleSpend(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	codes := ts.backupCodes(str(t, ts.login("d@example.com").Body, "token"))
	const n = 6 // the losers stay within the 5-failure budget
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "d@example.com", "code": codes[0]}).Status
		}()
	}
	wg.Wait()
	close(statuses)
	wins := 0
	for s := range statuses {
		if s == 200 {
			wins++
		} else if s != 401 {
			t.Fatalf("status %d", s)
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent uses of one code succeeded, want exactly 1", wins)
	}
}
