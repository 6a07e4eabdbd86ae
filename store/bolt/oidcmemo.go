package bolt

import (
	"bytes"
	"maps"
	"slices"
	"sync"

	"latchkey/store"
)

// Decoded OpenID rows, by their bytes. A sign-in reads its client's row
// four times (the authorization endpoint's check, the transaction that
// answers the request, the code's lookup and the exchange's
// transaction) and the authorization request's twice at the token
// endpoint, each time the same bytes, and decoding that JSON was the
// largest part of a sign-in's store work. A row is still read from the
// file in the transaction that asks for it, every time; only its
// decoding is skipped when the bytes read are the very bytes decoded
// before, so the value is the one decoding would give. A client changed
// or deleted is read as it now is at once: its new bytes are another
// key, its absence is not found. Nothing here is keyed by a row's
// key or survives as anything but bytes and their decoding.

// jsonMemo keeps the values decoded from up to max distinct JSON rows;
// when full it starts over. Callers get their own deep copy (clone), so
// a value changed by one never reaches another.
type jsonMemo[T any] struct {
	mu    sync.Mutex
	max   int
	byRaw map[string]*T
	clone func(*T) *T
}

// decode returns the value of row raw: a copy of the one decoded from
// the same bytes before, or raw decoded (and kept).
func (m *jsonMemo[T]) decode(raw []byte) (*T, error) {
	m.mu.Lock()
	v := m.byRaw[string(raw)]
	m.mu.Unlock()
	if v != nil {
		return m.clone(v), nil
	}
	v = new(T)
	if err := jsonDecode(raw, v); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.byRaw == nil || len(m.byRaw) >= m.max {
		m.byRaw = make(map[string]*T, m.max)
	}
	m.byRaw[string(raw)] = v
	m.mu.Unlock()
	return m.clone(v), nil
}

// oidcMemoRows bounds each memo: a few hundred rows of a few hundred
// bytes.
const oidcMemoRows = 256

var (
	oidcClientMemo      = &jsonMemo[store.OIDCClient]{max: oidcMemoRows, clone: cloneOIDCClient}
	oidcAuthRequestMemo = &jsonMemo[store.OIDCAuthRequest]{max: oidcMemoRows, clone: cloneOIDCAuthRequest}
)

// cloneOIDCClient returns a deep copy of c (nil and empty stay apart).
func cloneOIDCClient(c *store.OIDCClient) *store.OIDCClient {
	out := *c
	out.SecretHash = bytes.Clone(c.SecretHash)
	out.RedirectURIs = slices.Clone(c.RedirectURIs)
	out.PostLogoutRedirectURIs = slices.Clone(c.PostLogoutRedirectURIs)
	out.GrantTypes = slices.Clone(c.GrantTypes)
	out.Scopes = slices.Clone(c.Scopes)
	out.Claims = maps.Clone(c.Claims)
	return &out
}

// cloneOIDCAuthRequest returns a deep copy of r (nil and empty stay
// apart).
func cloneOIDCAuthRequest(r *store.OIDCAuthRequest) *store.OIDCAuthRequest {
	out := *r
	out.Scopes = slices.Clone(r.Scopes)
	out.Prompt = slices.Clone(r.Prompt)
	if r.MaxAge != nil {
		v := *r.MaxAge
		out.MaxAge = &v
	}
	out.UILocales = slices.Clone(r.UILocales)
	out.AMR = slices.Clone(r.AMR)
	out.CodeHash = bytes.Clone(r.CodeHash)
	return &out
}
