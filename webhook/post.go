package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
// Result.Err; its text never holds the URL, so it may be stored and shown.
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
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL
		}
		return Result{Duration: time.Since(start), Err: fmt.Errorf("webhook: %w", err)}
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
