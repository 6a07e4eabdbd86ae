package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// User import and export (docs/api.md, "Import and export"): both
// stream, so their
// handlers lift the server's read and write deadlines for the request.

// MaxImportBytes is the largest import body.
const MaxImportBytes = 64 << 20

// errImportTooLarge answers an import body over MaxImportBytes.
var errImportTooLarge = auth.ErrPayloadTooLarge.With("Import body is larger than 64 MiB: split the file.")

// ioDeadline is how long one import or export may read or write.
const ioDeadline = 30 * time.Minute

// importUsers is POST /admin/projects/:id/users/import.
func (s *Server) importUsers(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-ndjson" {
		return auth.Invalid("Content-Type must be application/x-ndjson (one JSON object per line).")
	}
	if r.ContentLength > MaxImportBytes {
		return errImportTooLarge
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(ioDeadline))
	rc.SetWriteDeadline(time.Now().Add(ioDeadline))
	body := http.MaxBytesReader(unwrapWriter(w), r.Body, MaxImportBytes)
	rep, err := s.auth.ImportUsers(r.Context(), p.ByName("id"), body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errImportTooLarge
	} else if err != nil {
		return err
	}
	return ok(w, rep)
}

// exportUsers is GET /admin/projects/:id/users/export: JSON lines, one
// user each, written as they are read.
func (s *Server) exportUsers(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(ioDeadline))
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	start := func() error {
		h := w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	started := false
	err := s.auth.ExportUsers(r.Context(), p.ByName("id"), func() error { started = true; return start() }, func(u auth.ExportUser) error {
		if err := enc.Encode(u); err != nil {
			return err
		}
		if bw.Buffered() == 0 {
			rc.Flush()
		}
		return nil
	})
	if !started {
		return err
	}
	// Once the status is sent an error can only cut the stream short: the
	// client sees a body that ends early (without a last newline).
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		s.log.Warn("user export cut short", "project", p.ByName("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
