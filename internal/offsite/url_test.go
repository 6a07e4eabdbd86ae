package offsite

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// TestParseURL: the forms --backup-to and restore --from take, and the
// refusals, each one line naming what is wrong.
func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Target
	}{
		{"s3://my-bucket", Target{Bucket: "my-bucket", Endpoint: DefaultEndpoint, Secure: true}},
		{"s3://my-bucket/", Target{Bucket: "my-bucket", Endpoint: DefaultEndpoint, Secure: true}},
		{"S3://my.bucket/backups/latchkey/?region=eu-west-1", Target{Bucket: "my.bucket", Prefix: "backups/latchkey/", Endpoint: DefaultEndpoint, Secure: true, Region: "eu-west-1"}},
		{"s3://b12/p?endpoint=minio.lan:9000&secure=false", Target{Bucket: "b12", Prefix: "p/", Endpoint: "minio.lan:9000", Secure: false}},
		{"s3://b12/p?endpoint=http://127.0.0.1:9000", Target{Bucket: "b12", Prefix: "p/", Endpoint: "127.0.0.1:9000", Secure: false}},
		{"s3://b12?secure=false&endpoint=http://127.0.0.1:9000/", Target{Bucket: "b12", Endpoint: "127.0.0.1:9000", Secure: false}},
		{"s3://b12/a%20b/c?endpoint=https://s3.example.com&region=auto", Target{Bucket: "b12", Prefix: "a b/c/", Endpoint: "s3.example.com", Secure: true, Region: "auto"}},
		{"s3://b12?endpoint=[::1]:9000&secure=no", Target{Bucket: "b12", Endpoint: "[::1]:9000", Secure: false}},
		{"s3://b12?endpoint=fra1.digitaloceanspaces.com", Target{Bucket: "b12", Endpoint: "fra1.digitaloceanspaces.com", Secure: true}},
	} {
		got, err := ParseURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if back, err := ParseURL(got.URL()); err != nil || back != got {
			t.Errorf("ParseURL(%q) = %+v, %v; want it back", got.URL(), back, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "must be an s3:// URL"},
		{"https://bucket/p", "must be an s3:// URL"},
		{"s3:/bucket", "must be an s3:// URL"},
		{"s3://", "is not a bucket name"},
		{"s3://Bucket", "is not a bucket name"},
		{"s3://ab", "is not a bucket name"},
		{"s3://b_c_d", "is not a bucket name"},
		{"s3://bucket:9000/p", "is not a bucket name"},
		{"s3://key:secret@bucket/p", "credentials do not go in the URL"},
		{"s3://bucket/p#frag", "fragment"},
		{"s3://bucket/a//b", "empty, . or .. segment"},
		{"s3://bucket/a/../b", "empty, . or .. segment"},
		{"s3://bucket/a%00b", "control character"},
		{"s3://bucket/a%zz", "bad %-escape"},
		{"s3://bucket/" + strings.Repeat("p", 901), "longer than 900 bytes"},
		{"s3://bucket?endpoint=ftp://host", "endpoint \"ftp://host\" must be"},
		{"s3://bucket?endpoint=host/path", "must be host[:port]"},
		{"s3://bucket?endpoint=host:0", "must be host[:port]"},
		{"s3://bucket?endpoint=host:99999", "must be host[:port]"},
		{"s3://bucket?endpoint=::1", "must be host[:port]"},
		{"s3://bucket?endpoint=user@host", "the endpoint holds credentials"},
		{"s3://bucket?endpoint=", "must be host[:port]"},
		{"s3://bucket?endpoint=http://h&secure=true", "contradicts the endpoint's scheme"},
		{"s3://bucket?secure=maybe", "secure=\"maybe\" must be true or false"},
		{"s3://bucket?region=eu%20west", "is not a region name"},
		{"s3://bucket?access_key=x", "unknown option \"access_key\""},
		{"s3://bucket?region=a&region=b", "region= is given 2 times"},
		{"s3://bucket?%zz", "the query cannot be parsed"},
	} {
		_, err := ParseURL(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseURL(%q) err = %v, want one line containing %q", tc.in, err, tc.want)
		}
	}
	for _, in := range []string{"s3://key:hunter2@bucket", "s3://bucket?endpoint=https://AKIA:hunter2@minio.lan:9000", "s3://bucket?endpoint=AKIA:hunter2@minio.lan"} {
		if _, err := ParseURL(in); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) err = %v: it must refuse without repeating the secret", in, err)
		}
	}
}

// TestObjectNames: a backup's name holds its UTC time to the second and
// names sort as their times; other names are not backups.
func TestObjectNames(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 31, 23, 59, 58, 999, time.FixedZone("x", 3600))
	if got := ObjectName(at); got != "latchkey-20261231T225958Z.db" {
		t.Fatalf("ObjectName = %q", got)
	}
	if got, ok := NameTime(ObjectName(at)); !ok || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("NameTime = %v, %v", got, ok)
	}
	if ObjectName(at) >= ObjectName(at.Add(time.Second)) {
		t.Fatal("names do not sort as times")
	}
	for _, n := range []string{"latchkey-manual.db", "latchkey-20261231T225958Z.db.part", "x/latchkey-20261231T225958Z.db", "latchkey-20261399T999999Z.db"} {
		if _, ok := NameTime(n); ok {
			t.Errorf("NameTime(%q) accepted", n)
		}
	}
}

// FuzzParseURL: ParseURL never panics, and what it accepts is usable:
// a valid bucket name, a prefix that is empty or a clean folder, an
// endpoint the client takes, a target that URL writes back to itself
// and whose object names S3 accepts. Seeds are in
// testdata/fuzz/FuzzParseURL.
func FuzzParseURL(f *testing.F) {
	f.Add("s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1")
	f.Fuzz(func(t *testing.T, in string) {
		tg, err := ParseURL(in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("two-line error %q", err)
			}
			return
		}
		if err := s3utils.CheckValidBucketNameStrict(tg.Bucket); err != nil {
			t.Fatalf("bucket %q: %v", tg.Bucket, err)
		}
		if tg.Prefix != "" && (!strings.HasSuffix(tg.Prefix, "/") || strings.HasPrefix(tg.Prefix, "/") || strings.Contains(tg.Prefix, "//") || !utf8.ValidString(tg.Prefix)) {
			t.Fatalf("prefix %q", tg.Prefix)
		}
		if tg.Endpoint == "" || strings.ContainsAny(tg.Endpoint, "/?#@ ") {
			t.Fatalf("endpoint %q", tg.Endpoint)
		}
		if err := s3utils.CheckValidObjectName(tg.Prefix + ObjectName(time.Unix(0, 0))); err != nil {
			t.Fatalf("object name under %q: %v", tg.Prefix, err)
		}
		back, err := ParseURL(tg.URL())
		if err != nil || back != tg {
			t.Fatalf("ParseURL(%q) = %+v, %v; want %+v", tg.URL(), back, err, tg)
		}
		if _, err := Dial(tg, Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, Options{}); err != nil {
			t.Fatalf("Dial(%+v): %v", tg, err)
		}
	})
}
