// Package offsite uploads consistent copies of the data file to an
// S3-compatible bucket on a schedule (latchkey serve --backup-to), keeps
// the newest of them, and fetches one back (latchkey restore). It
// imports none of latchkey's packages: the copy comes from a function
// (the store's Backup), and main wires it to the scheduler, /metrics and
// /ready.
package offsite

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// DefaultEndpoint is the S3 endpoint when the URL names none: Amazon S3
// (the client finds the bucket's region by itself unless region= says).
const DefaultEndpoint = "s3.amazonaws.com"

// maxPrefix bounds the prefix so that a backup's object name (prefix and
// latchkey-YYYYMMDDTHHMMSSZ.db) stays well within S3's 1024 bytes.
const maxPrefix = 900

// Target is where backups go: parsed from
// s3://BUCKET[/PREFIX][?endpoint=HOST[:PORT]|http(s)://HOST[:PORT]&region=R&secure=BOOL].
type Target struct {
	// Bucket is the bucket's name (S3's naming rules).
	Bucket string
	// Prefix is "" or a folder ending in "/" ("backups/latchkey/"):
	// every object latchkey writes or deletes is directly under it.
	Prefix string
	// Endpoint is the server's host[:port] (DefaultEndpoint when the URL
	// names none).
	Endpoint string
	// Secure is HTTPS (the default); false for a plain-HTTP server on a
	// trusted network (endpoint=http://... or secure=false).
	Secure bool
	// Region is the bucket's region; empty lets the client ask the server.
	Region string
}

// ParseURL reads a --backup-to or restore --from URL. It refuses what
// it does not understand, in one line that never repeats a credential:
// credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, not
// the URL.
func ParseURL(raw string) (Target, error) {
	var t Target
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.EqualFold(scheme, "s3") {
		return t, errors.New("must be an s3:// URL: s3://bucket/prefix?endpoint=host:port&region=region")
	}
	if strings.ContainsAny(rest, "#") {
		return t, errors.New("s3:// URL: a fragment (#) has no meaning here")
	}
	beforeQuery, rawQuery, _ := strings.Cut(rest, "?")
	hostPart, rawPath, _ := strings.Cut(beforeQuery, "/")
	if strings.Contains(hostPart, "@") {
		return t, errors.New("s3:// URL: credentials do not go in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if err := s3utils.CheckValidBucketNameStrict(hostPart); err != nil {
		return t, fmt.Errorf("s3:// URL: %q is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens)", clip(hostPart))
	}
	t.Bucket = hostPart
	prefix, err := url.PathUnescape(rawPath)
	if err != nil {
		return t, errors.New("s3:// URL: the prefix has a bad %-escape")
	}
	if t.Prefix, err = cleanPrefix(prefix); err != nil {
		return t, err
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return t, errors.New("s3:// URL: the query cannot be parsed")
	}
	for k, vs := range q {
		switch k {
		case "endpoint", "region", "secure":
		default:
			return t, fmt.Errorf("s3:// URL: unknown option %q (known: endpoint, region, secure)", clip(k))
		}
		if len(vs) != 1 {
			return t, fmt.Errorf("s3:// URL: %s= is given %d times", k, len(vs))
		}
	}
	t.Endpoint, t.Secure = DefaultEndpoint, true
	schemeSet := false
	if vs, ok := q["endpoint"]; ok {
		if t.Endpoint, schemeSet, t.Secure, err = parseEndpoint(vs[0]); err != nil {
			return t, err
		}
	}
	if vs, ok := q["secure"]; ok {
		b, ok := parseBool(vs[0])
		if !ok {
			return t, fmt.Errorf("s3:// URL: secure=%q must be true or false", clip(vs[0]))
		}
		if schemeSet && b != t.Secure {
			return t, errors.New("s3:// URL: secure= contradicts the endpoint's scheme")
		}
		t.Secure = b
	}
	if vs, ok := q["region"]; ok {
		if !validRegion(vs[0]) {
			return t, fmt.Errorf("s3:// URL: region %q is not a region name (letters, digits, - _ .)", clip(vs[0]))
		}
		t.Region = vs[0]
	}
	return t, nil
}

// cleanPrefix returns "" or the prefix with one trailing "/", refusing
// empty, "." or ".." segments and control characters.
func cleanPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	if len(p) > maxPrefix {
		return "", fmt.Errorf("s3:// URL: the prefix is longer than %d bytes", maxPrefix)
	}
	if !utf8.ValidString(p) {
		return "", errors.New("s3:// URL: the prefix is not UTF-8")
	}
	for _, r := range p {
		if unicode.IsControl(r) || r == '\\' {
			return "", errors.New("s3:// URL: the prefix holds a control character or a backslash")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", errors.New("s3:// URL: the prefix has an empty, . or .. segment")
		}
	}
	return p + "/", nil
}

// parseEndpoint reads endpoint=: host[:port], or http:// or https://
// followed by one (then the scheme says whether it is secure).
func parseEndpoint(v string) (host string, schemeSet, isSecure bool, err error) {
	isSecure = true
	if strings.Contains(v, "@") {
		// user:password@host: refused without repeating it, since the
		// line goes to logs.
		return "", false, false, errors.New("s3:// URL: the endpoint holds credentials (user:password@): they go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never in the URL")
	}
	bad := fmt.Errorf("s3:// URL: endpoint %q must be host[:port], http://host[:port] or https://host[:port]", clip(v))
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http":
			isSecure = false
		case "https":
			isSecure = true
		default:
			return "", false, false, bad
		}
		schemeSet = true
		v = strings.TrimSuffix(rest, "/")
	}
	if v == "" || strings.ContainsAny(v, "/?#@ \\") {
		return "", false, false, bad
	}
	name, port := v, ""
	switch {
	case strings.HasPrefix(v, "["):
		// An IPv6 address, [::1] or [::1]:9000.
		inner, rest, ok := strings.Cut(v[1:], "]")
		if !ok || (rest != "" && !strings.HasPrefix(rest, ":")) {
			return "", false, false, bad
		}
		if ip := net.ParseIP(inner); ip == nil || ip.To4() != nil || !strings.Contains(inner, ":") {
			return "", false, false, bad
		}
		name, port = inner, strings.TrimPrefix(rest, ":")
		if rest == ":" {
			return "", false, false, bad
		}
	case strings.Count(v, ":") == 1:
		name, port, _ = strings.Cut(v, ":")
		if port == "" {
			return "", false, false, bad
		}
		fallthrough
	default:
		if strings.Contains(name, ":") || name == "" || !validHost(name) {
			return "", false, false, bad // an IPv6 address needs brackets
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", false, false, bad
		}
	}
	return v, schemeSet, isSecure, nil
}

// validHost accepts a DNS name or an IP address.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

func validRegion(r string) bool {
	if r == "" || len(r) > 64 {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// clip shortens a piece of bad input quoted back in a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// String is the target without its options, s3://bucket/prefix/, for
// messages and logs.
func (t Target) String() string { return "s3://" + t.Bucket + "/" + t.Prefix }

// URL is the whole target as an s3:// URL that ParseURL reads back to t.
func (t Target) URL() string {
	q := url.Values{}
	scheme := "https://"
	if !t.Secure {
		scheme = "http://"
	}
	q.Set("endpoint", scheme+t.Endpoint)
	if t.Region != "" {
		q.Set("region", t.Region)
	}
	return "s3://" + t.Bucket + "/" + (&url.URL{Path: t.Prefix}).EscapedPath() + "?" + q.Encode()
}
