package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxResponse is how much of a receiver's response body is read, then
// discarded.
const maxResponse = 64 << 10

// maxRetryAfter caps the wait a receiver may ask for with Retry-After.
const maxRetryAfter = 24 * time.Hour

// Result is the outcome of one delivery attempt.
type Result struct {
	Status     int           // response status; 0 if no response came
	Duration   time.Duration // from sending the request to the end of the response
	RetryAfter time.Duration // Retry-After of a 429 or 503, at most 24 h; else 0
	Err        error         // why the attempt failed; nil if it succeeded
}

// OK reports whether the attempt succeeded: the receiver answered 2xx.
func (r Result) OK() bool {
	return r.Err == nil && r.Status >= 200 && r.Status < 300
}

// Post sends body to target with headers h (see Headers) using c, normally
// a client from NewClient, and reads at most 64 KiB of the response, which
// it discards. A transport error, a timeout or a non-2xx status sets
// Result.Err; its text never holds the URL, the address the host resolved
// to or the resolver's, so it may be stored and shown to the project.
func Post(ctx context.Context, c *http.Client, target string, h http.Header, body []byte) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Result{Err: ErrURLInvalid}
	}
	if h != nil {
		req.Header = h.Clone()
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Result{Duration: time.Since(start), Err: &transportError{describe(err), err}}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	r := Result{Status: resp.StatusCode, Duration: time.Since(start)}
	switch {
	case r.Status >= 200 && r.Status < 300:
	case r.Status >= 300 && r.Status < 400:
		r.Err = fmt.Errorf("webhook: status %d: redirect not followed", r.Status)
	default:
		r.Err = fmt.Errorf("webhook: status %d", r.Status)
	}
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}

// transportError is a failed attempt's cause with a text safe to show.
type transportError struct {
	msg   string
	cause error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.cause }

// describe says why a request failed without naming addresses: the
// errors of net and net/http carry the resolved address ("dial tcp
// 10.1.2.3:80") and the resolver's ("lookup x on 10.0.0.2:53"), which
// would tell a project about the network the server runs in.
func describe(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrPrivateAddress):
		return "webhook: refused: the host is a private, loopback or link-local address."
	case errors.Is(err, ErrNotLoopback):
		return "webhook: refused: the host is a private, link-local or reserved address (test-mode webhooks may reach loopback only)."
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "webhook: the host name does not resolve."
		}
		return "webhook: the host name could not be resolved."
	case errors.Is(err, syscall.ECONNREFUSED):
		return "webhook: connection refused."
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "webhook: the connection was closed before a response."
	case errors.As(err, &netErr) && netErr.Timeout():
		return "webhook: timeout: no response in time."
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return "webhook: TLS certificate not trusted: " + certErr.Err.Error()
	}
	var recErr tls.RecordHeaderError
	if errors.As(err, &recErr) {
		return "webhook: TLS handshake failed (is the server speaking https?)."
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return "webhook: " + opErr.Op + " failed."
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop the URL
	}
	return "webhook: " + err.Error()
}

// retryAfter parses a Retry-After value, delay-seconds or an HTTP date, as
// a wait from now, capped at maxRetryAfter. It is 0 if v is absent, invalid
// or in the past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter // too many digits is too long
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// schedule holds the waits after attempts 1, 2, … fail.
var schedule = [...]time.Duration{
	30 * time.Second,
	2 * time.Minute,
	10 * time.Minute,
	30 * time.Minute,
	1 * time.Hour,
	3 * time.Hour,
	6 * time.Hour,
	12 * time.Hour,
}

// MaxAttempts is how many times an event is tried before it is failed.
const MaxAttempts = len(schedule) + 1

// NextDelay returns how long to wait after attempt (counted from 1) failed
// before trying again: 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h, but
// never less than retryAfter. It returns false when attempt was the last
// (MaxAttempts) and the delivery is failed.
func NextDelay(attempt int, retryAfter time.Duration) (time.Duration, bool) {
	if attempt >= MaxAttempts {
		return 0, false
	}
	attempt = max(attempt, 1)
	return max(schedule[attempt-1], retryAfter), true
}
