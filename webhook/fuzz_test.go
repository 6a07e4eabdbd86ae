package webhook

import (
	"bufio"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// seeds adds each line of testdata/webhook/name as a fuzz seed.
func seeds(f *testing.F, name string) {
	file, err := os.Open("../testdata/webhook/" + name)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		f.Add(sc.Text())
	}
	if err := sc.Err(); err != nil {
		f.Fatal(err)
	}
}

func FuzzValidateURL(f *testing.F) {
	seeds(f, "urls.txt")
	f.Add("https://example.com/hook")
	f.Add("http://[::1]:8080/")
	f.Add("https://a@b/")
	f.Add("http://%41/")
	f.Add("https://" + strings.Repeat("a", MaxURLLen) + "/")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ValidateURL(raw)
		if err != nil {
			var te *TargetError
			if u != nil || !errors.As(err, &te) {
				t.Fatalf("ValidateURL(%q)=%v, %v: want nil and a *TargetError", raw, u, err)
			}
			return
		}
		if len(raw) > MaxURLLen || strings.Contains(raw, "#") ||
			strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			t.Fatalf("accepted %q", raw)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("accepted %q as %#v", raw, u)
		}
		// A host of digits and dots is a standard IP address, which is
		// what CheckTarget and the dial-time guard judge.
		if _, err := netip.ParseAddr(u.Hostname()); err != nil && strings.Trim(u.Hostname(), "0123456789.") == "" {
			t.Fatalf("accepted %q with the shorthand numeric host %q", raw, u.Hostname())
		}
		// What is accepted survives a round trip, as the store will keep it.
		if _, err := ValidateURL(u.String()); err != nil && err != ErrURLTooLong {
			t.Fatalf("ValidateURL(%q) ok, but ValidateURL(%q)=%v", raw, u.String(), err)
		}
	})
}
