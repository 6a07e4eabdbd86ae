package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// keyHandler is a route that needs an API key.
type keyHandler func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *auth.Caller) error

// sessionHandler is a route that needs a user session token.
type sessionHandler func(w http.ResponseWriter, r *http.Request, p httprouter.Params, pr *auth.Principal) error

// key wraps h with API-key validation and the rate limit; over the rate
// it answers 429 RATE_LIMIT_EXCEEDED.
func (s *Server) key(h keyHandler) httprouter.Handle {
	return s.keyWith(h, s.authKey)
}

// keyRate401 is key for the two by-external passkey routes, which answer
// RATE_LIMIT_EXCEEDED with 401 (byExternalKey).
func (s *Server) keyRate401(h keyHandler) httprouter.Handle {
	return s.keyWith(h, s.byExternalKey)
}

func (s *Server) keyWith(h keyHandler, authKey func(http.ResponseWriter, *http.Request) (*auth.Caller, error)) httprouter.Handle {
	return s.handle(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		c, err := authKey(w, r)
		if err != nil {
			return err
		}
		return h(w, r, p, c)
	})
}

// authKey validates the request's API key and counts it against the
// rate, setting the X-RateLimit headers.
func (s *Server) authKey(w http.ResponseWriter, r *http.Request) (*auth.Caller, error) {
	c, err := s.auth.AuthenticateKey(r.Context(), r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	res := s.auth.Allow(c)
	h := w.Header()
	h["X-Ratelimit-Limit"] = []string{strconv.Itoa(res.Limit)}
	h["X-Ratelimit-Remaining"] = []string{strconv.Itoa(res.Remaining)}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(res.Reset, 10)}
	if !res.Allowed {
		return nil, auth.ErrRateLimitExceeded.WithRetry(time.Duration(res.RetryAfter) * time.Second)
	}
	return c, nil
}

// byExternalKey is authKey for the two by-external passkey routes, whose
// contract answers RATE_LIMIT_EXCEEDED with 401 instead of 429.
func (s *Server) byExternalKey(w http.ResponseWriter, r *http.Request) (*auth.Caller, error) {
	c, err := s.authKey(w, r)
	if errors.Is(err, auth.ErrRateLimitExceeded) {
		return nil, withStatus(http.StatusUnauthorized, err)
	}
	return c, err
}

// session wraps h with user-token validation (401 INVALID_SESSION), the
// per-session limit for a call that is not a read (authSession), and the
// CORS headers of a browser call (allowOrigin).
func (s *Server) session(h sessionHandler) httprouter.Handle {
	return s.handle(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		pr, err := s.authSession(w, r)
		if err != nil {
			return err
		}
		return h(w, r, p, pr)
	})
}

// sessionProofs is session for GET /session, a read: h also gets how
// the session was proven, from the row the token's check read.
func (s *Server) sessionProofs(h func(w http.ResponseWriter, r *http.Request, pr *auth.Principal, sp auth.SessionProofs) error) httprouter.Handle {
	return s.handle(func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		pr, sp, err := s.auth.AuthenticateSessionProofs(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			s.allowOrigin(w, r, "")
			return err
		}
		s.allowOrigin(w, r, pr.ProjectID)
		return h(w, r, pr, sp)
	})
}

// authSession validates the request's user token and adds the CORS
// headers for the token's project; when it fails (401, or 429 over the
// limit), for any project's origin, so the page can read the answer. A
// call that writes or starts a ceremony (any method but GET and HEAD:
// every such route with a user token, the passkey ceremonies among them)
// counts against the project's per-session limit; a read never does, so
// an app may check its user's session on every request.
func (s *Server) authSession(w http.ResponseWriter, r *http.Request) (*auth.Principal, error) {
	var pr *auth.Principal
	var err error
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		pr, err = s.auth.AuthenticateSession(r.Context(), r.Header.Get("Authorization"))
	} else {
		pr, err = s.auth.AuthenticateSessionWrite(r.Context(), r.Header.Get("Authorization"))
	}
	if err != nil {
		s.allowOrigin(w, r, "")
		return nil, err
	}
	s.allowOrigin(w, r, pr.ProjectID)
	return pr, nil
}

// admin wraps h with the admin-token check (401 UNAUTHORIZED), throttled
// per client address (429 RATE_LIMIT_EXCEEDED past 10 failures a minute).
func (s *Server) admin(h handler) httprouter.Handle {
	return s.handle(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ip, _ := s.clientIP(r, false)
		if err := s.auth.CheckAdminFrom(r.Header.Get("Authorization"), ip); err != nil {
			return err
		}
		return h(w, r, p)
	})
}

// meta describes the request for events and risk: the end user's IP
// (X-End-User-IP on API-key calls, else the peer or, from a trusted
// proxy, X-Forwarded-For), whether it is known to be the end user's, and
// the user agent; and the end user's Accept-Language (the app passes it
// on), which picks the mail template's locale unless the body names one.
func (s *Server) meta(r *http.Request, keyCall bool) auth.Meta {
	ip, endUser := s.clientIP(r, keyCall)
	return auth.Meta{IP: ip, EndUserIP: endUser, UserAgent: r.UserAgent(), Locale: r.Header.Get("Accept-Language")}
}

// clientIP returns the request's client address and whether it is the
// end user's own: X-End-User-IP on an API-key call, or the peer (or the
// address a trusted proxy forwarded) of a call without an API key (a
// browser, or an app holding the user's session). Without X-End-User-IP
// an API-key call comes from the app's backend, directly or through the
// proxy, so its address is not the end user's.
func (s *Server) clientIP(r *http.Request, keyCall bool) (string, bool) {
	if keyCall {
		if v := strings.TrimSpace(r.Header.Get("X-End-User-IP")); v != "" {
			if a, err := netip.ParseAddr(v); err == nil {
				return a.Unmap().String(), true
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host, !keyCall
	}
	peer = peer.Unmap()
	if !s.trusted(peer) {
		return peer.String(), !keyCall
	}
	// Walk X-Forwarded-For from the right, skipping trusted proxies.
	xff := r.Header.Values("X-Forwarded-For")
	parts := strings.Split(strings.Join(xff, ","), ",")
	for i := len(parts) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(parts[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a.String(), !keyCall
		}
		peer = a
	}
	return peer.String(), !keyCall
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
