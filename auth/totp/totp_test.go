package totp

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/pquerna/otp"
)

// rfcSecret is the SHA-1 seed of RFC 6238 Appendix B.
var rfcSecret = []byte("12345678901234567890")

// rfcVectors are RFC 6238 Appendix B's SHA-1 rows: Unix time, 8-digit code.
var rfcVectors = []struct {
	unix int64
	code string
}{
	{59, "94287082"},
	{1111111109, "07081804"},
	{1111111111, "14050471"},
	{1234567890, "89005924"},
	{2000000000, "69279037"},
	{20000000000, "65353130"},
}

func TestCodeRFC6238(t *testing.T) {
	for _, v := range rfcVectors {
		got, err := Code(rfcSecret, Step(time.Unix(v.unix, 0)), 8)
		if err != nil {
			t.Fatal(err)
		}
		if got != v.code {
			t.Errorf("T=%d: code=%s, want %s", v.unix, got, v.code)
		}
	}
}

func TestMatchSkew(t *testing.T) {
	for _, v := range rfcVectors {
		at := time.Unix(v.unix, 0)
		code := v.code[2:] // the 6-digit code is the last 6 digits
		for _, c := range []struct {
			name   string
			offset time.Duration
			ok     bool
		}{
			{"same step", 0, true},
			{"one step later", Period * time.Second, true},
			{"one step earlier", -Period * time.Second, true},
			{"two steps later", 2 * Period * time.Second, false},
			{"two steps earlier", -2 * Period * time.Second, false},
		} {
			step, ok := Match(rfcSecret, code, at.Add(c.offset))
			if ok != c.ok {
				t.Errorf("T=%d %s: matched=%v, want %v", v.unix, c.name, ok, c.ok)
			}
			if ok && step != Step(at) {
				t.Errorf("T=%d %s: step=%d, want %d", v.unix, c.name, step, Step(at))
			}
		}
		for _, wrong := range []string{v.code, v.code[3:], "", "x" + v.code[3:]} {
			if _, ok := Match(rfcSecret, wrong, at); ok {
				t.Errorf("T=%d: %q matched", v.unix, wrong)
			}
		}
	}
}

func TestStep(t *testing.T) {
	for _, c := range []struct {
		unix int64
		want int64
	}{{0, 0}, {29, 0}, {30, 1}, {59, 1}, {1111111109, 37037036}, {-1, -1}, {-30, -1}, {-31, -2}} {
		if got := Step(time.Unix(c.unix, 0)); got != c.want {
			t.Errorf("Step(%d)=%d, want %d", c.unix, got, c.want)
		}
	}
}

func TestGenerate(t *testing.T) {
	k, err := Generate("Acme App", "ann+totp@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Secret) != SecretSize {
		t.Fatalf("secret is %d bytes, want %d", len(k.Secret), SecretSize)
	}
	if raw, err := b32.DecodeString(k.Base32); err != nil || !bytes.Equal(raw, k.Secret) || len(k.Base32) != 32 {
		t.Fatalf("base32 %q does not encode the secret (%v)", k.Base32, err)
	}
	u, err := url.Parse(k.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/Acme App:ann+totp@example.com" {
		t.Fatalf("url %s: scheme %q host %q label %q", k.URL, u.Scheme, u.Host, u.Path)
	}
	for field, want := range map[string]string{"secret": k.Base32, "issuer": "Acme App", "algorithm": "SHA1", "digits": "6", "period": "30"} {
		if got := q.Get(field); got != want {
			t.Errorf("%s=%q, want %q", field, got, want)
		}
	}
	k2, _ := Generate("Acme App", "ann+totp@example.com")
	if bytes.Equal(k.Secret, k2.Secret) {
		t.Fatal("two keys share a secret")
	}
}

// TestURLEscaping: issuer and account read back whole from the otpauth
// URL with net/url, in the label (split at its one literal colon) and in
// the issuer parameter, whatever they hold; pquerna/otp's parser (a
// second reader) agrees.
func TestURLEscaping(t *testing.T) {
	accounts := []string{"ann@example.com", "bo.b+tag@example.com", "o'neil@example.com"}
	for _, issuer := range []string{
		"Acme", "Smith & Sons", "R&D + Co", "a=b", "x/y", "#1", "why?", "100%", "%41", "  two  spaces ",
		"Zürich — 東京", "Ops: Team", "a&issuer=evil", "tab\there", "emoji 🔑",
	} {
		for _, account := range accounts {
			k, err := Generate(issuer, account)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(k.URL)
			if err != nil {
				t.Fatalf("%q: %v", k.URL, err)
			}
			if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/"+issuer+":"+account {
				t.Fatalf("%s: scheme %q host %q path %q", k.URL, u.Scheme, u.Host, u.Path)
			}
			label := strings.TrimPrefix(u.EscapedPath(), "/")
			if strings.Count(label, ":") != 1 {
				t.Fatalf("%s: label %q has more than the one separating colon", k.URL, label)
			}
			rawIssuer, rawAccount, _ := strings.Cut(label, ":")
			gotIssuer, err1 := url.PathUnescape(rawIssuer)
			gotAccount, err2 := url.PathUnescape(rawAccount)
			if err1 != nil || err2 != nil || gotIssuer != issuer || gotAccount != account {
				t.Fatalf("%s: label reads %q:%q, want %q:%q", k.URL, gotIssuer, gotAccount, issuer, account)
			}
			q := u.Query()
			if len(q) != 5 || len(q["issuer"]) != 1 {
				t.Fatalf("%s: query %v", k.URL, q)
			}
			for field, want := range map[string]string{"secret": k.Base32, "issuer": issuer, "algorithm": "SHA1", "digits": "6", "period": "30"} {
				if got := q.Get(field); got != want {
					t.Fatalf("%s: %s=%q, want %q", k.URL, field, got, want)
				}
			}
			if strings.Contains(k.URL, "+") || strings.Contains(k.URL, " ") {
				t.Fatalf("%s: a literal + or space (read as a space by some apps)", k.URL)
			}
			pk, err := otp.NewKeyFromURL(k.URL)
			if err != nil || pk.Issuer() != issuer || pk.Secret() != k.Base32 {
				t.Fatalf("%s: pquerna/otp reads issuer %q (%v)", k.URL, pk.Issuer(), err)
			}
			if !strings.Contains(issuer, ":") && pk.AccountName() != account {
				t.Fatalf("%s: pquerna/otp reads account %q", k.URL, pk.AccountName())
			}
		}
	}
}

// TestQRDataURL: the image is a 256×256 PNG holding, with a quiet zone
// of at least 4 modules, exactly the modules of the QR code of the
// content, for short and long contents (small and large versions).
func TestQRDataURL(t *testing.T) {
	for _, n := range []int{10, 110, 300, 1200} {
		content := "otpauth://totp/x:" + strings.Repeat("a", n)
		du, err := QRDataURL(content)
		if err != nil {
			t.Fatal(err)
		}
		b64, found := strings.CutPrefix(du, "data:image/png;base64,")
		if !found {
			t.Fatalf("data URL prefix: %.40s", du)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != QRSize || b.Dy() != QRSize {
			t.Fatalf("image %v, want %dx%d", b, QRSize, QRSize)
		}
		want, _ := qr.Encode(content, qr.M, qr.Auto)
		dim := want.Bounds().Dx()
		box := darkBox(img)
		if box.Dx() != box.Dy() || box.Dx()%dim != 0 {
			t.Fatalf("len %d: code box %v is not %d whole modules", n, box, dim)
		}
		px := box.Dx() / dim
		if margin := min(box.Min.X, box.Min.Y, QRSize-box.Max.X, QRSize-box.Max.Y); margin < QRQuietZone*px {
			t.Fatalf("len %d: quiet zone %d px, want at least %d", n, margin, QRQuietZone*px)
		}
		for y := 0; y < dim; y++ {
			for x := 0; x < dim; x++ {
				got := dark(img, box.Min.X+x*px+px/2, box.Min.Y+y*px+px/2)
				if got != dark(want, x, y) {
					t.Fatalf("len %d: module (%d,%d) dark=%v, want %v", n, x, y, got, !got)
				}
			}
		}
	}
}

func dark(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r+g+b < 3*0x8000
}

// darkBox returns the bounding box of the dark pixels.
func darkBox(img image.Image) image.Rectangle {
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
	return box
}
