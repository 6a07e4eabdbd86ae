package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"
)

// openapiDoc is the OpenAPI 3.1 description of the API, maintained by
// hand beside the handlers; the tests validate every response they
// receive against it and check that it lists exactly the routes served.
//
//go:embed openapi.json
var openapiDoc []byte

// openapiETag names this build's document, hashed at its first request
// (not at the start: the document is half a megabyte).
var openapiETag = sync.OnceValue(func() string {
	sum := sha256.Sum256(openapiDoc)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
})

// openapi serves the document: no authentication, cacheable for five
// minutes, revalidated by ETag, readable from any origin (it is public
// and carries no credential, so API tools in a browser may load it).
func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := w.Header()
	etag := openapiETag()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	w.Write(openapiDoc)
	return nil
}

// etagMatch reports whether an If-None-Match header lists etag (or *).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
