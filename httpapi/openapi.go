package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"

	"latchkey/internal/promtext"
)

// openapiGzip is the OpenAPI 3.1 description of the API, maintained by
// hand beside the handlers in openapi.json (the tests validate every
// response they receive against it and check that it lists exactly the
// routes served), built in gzipped: half a megabyte of JSON is a
// twentieth of that compressed. TestOpenAPICompressed checks that it is
// openapi.json; go generate makes it again.
//
//go:generate env LATCHKEY_UPDATE_OPENAPI=1 go test -run ^TestOpenAPICompressed$ .
//go:embed openapi.json.gz
var openapiGzip []byte

// openapiETag names this build's document, hashed at its first request.
var openapiETag = sync.OnceValue(func() string {
	sum := sha256.Sum256(openapiGzip)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
})

// openapiDoc is the document uncompressed, for clients that do not take
// gzip: made at the first such request.
var openapiDoc = sync.OnceValues(func() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(openapiGzip))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
})

// openapi serves the document: no authentication, cacheable for five
// minutes, revalidated by ETag, readable from any origin (it is public
// and carries no credential, so API tools in a browser may load it);
// gzipped to clients that take it.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := w.Header()
	etag := openapiETag()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Vary", "Accept-Encoding")
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	if promtext.AcceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		w.Write(openapiGzip)
		return nil
	}
	doc, err := openapiDoc()
	if err != nil {
		return err
	}
	w.Write(doc)
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
