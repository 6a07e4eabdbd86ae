// Package offsitetest starts an S3-compatible server for tests: gofakes3
// with its in-memory backend, behind a real httptest.Server, so the S3
// client speaks real S3 HTTP (signed requests, XML listings, multipart
// uploads) to it. gofakes3 does not verify signatures; the server here
// checks that each request is signed (AWS4-HMAC-SHA256) with the test's
// access key, and can be taken down (every connection closed at once)
// or made to refuse writes.
package offsitetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The credentials the server accepts.
const (
	AccessKey = "AKIALATCHKEYTEST0001"
	SecretKey = "latchkey-test-secret-key-0123456789abcdef"
)

// Server is a running S3-compatible server with one bucket or more.
type Server struct {
	// Endpoint is its host:port (plain HTTP).
	Endpoint string
	backend  *s3mem.Backend
	srv      *httptest.Server
	down     atomic.Bool
	stall    atomic.Pointer[[]string]
	closing  chan struct{} // closed as the test ends, before the server closes
	refuse   atomic.Pointer[[]string]
	// Requests counts the requests that reached the S3 handler.
	Requests atomic.Int64
}

// Start starts a server holding the buckets named; Close runs at the
// test's end.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	s := &Server{backend: s3mem.New(), closing: make(chan struct{})}
	for _, b := range buckets {
		if err := s.backend.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	fake := gofakes3.New(s.backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	h := fake.Server()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			// Unreachable: the connection ends without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+AccessKey+"/") || !strings.Contains(auth, "Signature=") {
			s3Error(w, http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
			return
		}
		if p := s.stall.Load(); p != nil && slices.Contains(*p, r.Method) {
			// A connection that takes nothing: the body is not read
			// and no answer comes until the client gives up (the
			// server notices that only once the body is read, so the
			// test's end also lets go).
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		if p := s.refuse.Load(); p != nil && slices.Contains(*p, r.Method) {
			s3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied")
			return
		}
		if r.Method == http.MethodPut && r.URL.Query().Has("uploadId") && r.Header.Get("X-Amz-Content-Sha256") == streaming {
			// gofakes3 decodes aws-chunked bodies of PutObject but
			// not of UploadPart: decode them here, as S3 does.
			if err := unchunk(r); err != nil {
				s3Error(w, http.StatusBadRequest, "IncompleteBody", err.Error())
				return
			}
		}
		s.Requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.closing) }) // runs first
	u, _ := url.Parse(s.srv.URL)
	s.Endpoint = u.Host
	return s
}

// streaming marks a body sent in signed chunks (aws-chunked).
const streaming = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

// unchunk replaces an aws-chunked body by the data it carries: chunks of
// "SIZE;chunk-signature=SIG\r\nDATA\r\n", ending with a chunk of size 0.
// The data must add up to X-Amz-Decoded-Content-Length.
func unchunk(r *http.Request) error {
	want, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil {
		return errors.New("no X-Amz-Decoded-Content-Length")
	}
	br := bufio.NewReader(r.Body)
	var data bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("chunk header: %v", err)
		}
		size, sig, ok := strings.Cut(strings.TrimSuffix(line, "\r\n"), ";chunk-signature=")
		n, perr := strconv.ParseInt(size, 16, 64)
		if !ok || perr != nil || len(sig) != 64 || n < 0 {
			return fmt.Errorf("bad chunk header %q", line)
		}
		if _, err := io.CopyN(&data, br, n); err != nil {
			return fmt.Errorf("chunk data: %v", err)
		}
		crlf := make([]byte, 2)
		if _, err := io.ReadFull(br, crlf); err != nil || string(crlf) != "\r\n" {
			return errors.New("chunk not ended by CRLF")
		}
		if n == 0 {
			break
		}
	}
	if int64(data.Len()) != want {
		return fmt.Errorf("decoded %d bytes, X-Amz-Decoded-Content-Length says %d", data.Len(), want)
	}
	r.Body = io.NopCloser(&data)
	r.ContentLength = want
	r.Header.Set("Content-Length", strconv.FormatInt(want, 10))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	return nil
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>`+msg+`</Message></Error>`)
}

// URL is the s3:// URL of bucket/prefix on this server.
func (s *Server) URL(bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?endpoint=http://" + s.Endpoint + "&region=us-east-1"
}

// Env returns the environment the S3 client reads its credentials from.
func Env(k string) string {
	switch k {
	case "AWS_ACCESS_KEY_ID":
		return AccessKey
	case "AWS_SECRET_ACCESS_KEY":
		return SecretKey
	}
	return ""
}

// SetDown makes the server unreachable (every connection closed without
// an answer) or reachable again.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Stall makes the server take the requests of the methods named (PUT:
// uploads, GET: downloads) and never read them or answer, until the
// client gives up. Without methods it answers every request again.
func (s *Server) Stall(methods ...string) { s.stall.Store(&methods) }

// Refuse makes the server refuse the requests of the methods named (403
// AccessDenied): PUT and POST are writes, DELETE deletions. Without
// methods it accepts every request again.
func (s *Server) Refuse(methods ...string) { s.refuse.Store(&methods) }

// Keys lists the object keys of bucket under prefix, sorted, read from
// the backend directly.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	list, err := s.backend.ListBucket(bucket, &gofakes3.Prefix{Prefix: prefix, HasPrefix: true}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Contents {
		out = append(out, c.Key)
	}
	sort.Strings(out)
	return out
}

// Object reads an object from the backend directly.
func (s *Server) Object(t testing.TB, bucket, key string) []byte {
	t.Helper()
	o, err := s.backend.GetObject(bucket, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Contents.Close()
	b, err := io.ReadAll(o.Contents)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Put writes an object into the backend directly.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "application/octet-stream"}
	if _, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}
