package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"latchkey/store"
)

// User import and export (docs/api.md, "Import and export"). Both
// stream: the import reads its body a line at a time and commits every
// ImportChunk lines in one transaction, the export writes a page of
// users at a time, so neither holds the whole file or the whole table
// in memory.

// Import and export sizes.
const (
	// ImportChunk is how many lines one transaction of an import holds.
	ImportChunk = 1000
	// MaxImportLine is the longest line an import reads (longer ones are
	// rejected whole, and the import goes on with the next line).
	MaxImportLine = 64 << 10
	// MaxImportRejected is how many rejected lines an import's report
	// lists: the first ones, by line number. RejectedCount counts them
	// all.
	MaxImportRejected = 1000
	// exportPage is how many users one read transaction of an export
	// reads.
	exportPage = 500
)

// ImportReport is the answer to an import: how many lines created a
// user, how many updated one that has the line's address, and the
// lines rejected (1-based line numbers, with why), in line order: the
// first MaxImportRejected of them, so that a file of bad lines costs
// no more memory than a good one. RejectedCount is how many lines were
// rejected in all; RejectedTruncated says Rejected lists fewer.
type ImportReport struct {
	Success           bool             `json:"success"`
	Created           int              `json:"created"`
	Updated           int              `json:"updated"`
	Rejected          []ImportRejected `json:"rejected"`
	RejectedCount     int              `json:"rejectedCount"`
	RejectedTruncated bool             `json:"rejectedTruncated"`
}

// reject records a line rejected before its chunk's transaction. Lines
// come in order, so it goes last, unless the list is full: then every
// listed line comes before it.
func (rep *ImportReport) reject(line int, why string) {
	rep.RejectedCount++
	if len(rep.Rejected) < MaxImportRejected {
		rep.Rejected = append(rep.Rejected, ImportRejected{line, why})
	}
	rep.RejectedTruncated = rep.RejectedCount > len(rep.Rejected)
}

// ImportRejected is one rejected line of an import.
type ImportRejected struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// importLine is one line of an import: every field but email optional.
// Unknown fields are ignored, so that an export imports as it is.
type importLine struct {
	Email          *string `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	FirstName      *string `json:"firstName"`
	CompanyID      *string `json:"companyId"`
	EmailVerified  *bool   `json:"emailVerified"`
	CreatedAt      *string `json:"createdAt"`
	// Groups and Metadata, when given, replace the user's (null, [] and
	// {} clear them).
	Groups   json.RawMessage `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// importUser is a line checked: what it sets.
type importUser struct {
	line                int
	email               string
	ext, first, company *string // nil: not set by the line (kept on update)
	verified            *bool
	createdAt           time.Time
	// setGroups and setMetadata say the line gives groups and metadata
	// (nil: none, cleared); otherwise an update keeps the user's.
	setGroups, setMetadata bool
	groups                 []string
	metadata               json.RawMessage
}

// parseImportLine checks one line; its error is the rejection's text.
func parseImportLine(raw []byte) (*importUser, error) {
	var in importLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("%s has the wrong type", te.Field)
		}
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	if in.Email == nil {
		return nil, errors.New("email is required")
	}
	email, err := NormalizeEmail(*in.Email)
	if err != nil {
		return nil, errors.New("email is not a valid address")
	}
	u := &importUser{email: email, verified: in.EmailVerified}
	if in.ExternalUserID != nil {
		ext := strings.TrimSpace(*in.ExternalUserID)
		if n := utf8.RuneCountInString(ext); n > 255 || strings.ContainsRune(ext, 0) {
			return nil, errors.New("externalUserId must be 1 to 255 characters")
		}
		u.ext = &ext
	}
	if in.FirstName != nil {
		first := ""
		if strings.TrimSpace(*in.FirstName) != "" {
			if first, err = checkFirstName(*in.FirstName); err != nil {
				return nil, errors.New("firstName must be 1 to 100 characters")
			}
		}
		u.first = &first
	}
	if in.CompanyID != nil {
		c := strings.TrimSpace(*in.CompanyID)
		if len(c) > 128 || strings.ContainsRune(c, 0) {
			return nil, errors.New("companyId must be 1 to 128 characters")
		}
		u.company = &c
	}
	if in.Groups != nil {
		if u.groups, err = parseGroups(in.Groups); err != nil {
			return nil, err
		}
		u.setGroups = true
	}
	if in.Metadata != nil {
		if u.metadata, err = parseMetadata(in.Metadata); err != nil {
			return nil, err
		}
		u.setMetadata = true
	}
	if in.CreatedAt != nil && *in.CreatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *in.CreatedAt)
		if err != nil {
			return nil, errors.New("createdAt must be an RFC 3339 time")
		}
		if t.Before(minCreatedAt) || t.After(maxCreatedAt) {
			return nil, errRejectCreatedAt
		}
		u.createdAt = t.UTC()
	}
	return u, nil
}

// The times a store can hold (Unix nanoseconds in an int64, 1677-09-21
// to 2262-04-11) bound an imported createdAt, in whole years at the
// start and whole seconds at the end: a time outside would be stored as
// another one.
var (
	minCreatedAt       = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxCreatedAt       = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
	errRejectCreatedAt = fmt.Errorf("createdAt must be from %s to %s", minCreatedAt.Format(time.RFC3339), maxCreatedAt.Format(time.RFC3339))
)

// lineReader reads lines of at most MaxImportLine bytes; a longer line
// is skipped whole and reported as too long.
type lineReader struct {
	r *bufio.Reader
}

// next returns the next line without its line break (and a trailing CR),
// tooLong for a line that was skipped, and io.EOF after the last line.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	line, err = lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = lr.r.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		return nil, true, nil
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, false, err
	}
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	return line, false, nil
}

// ErrImportCutShort answers an import whose data ended before its end
// (the client stopped sending): the client's doing, not the server's.
var ErrImportCutShort = ErrValidation.With("Import body ended before its end: the chunks committed before stay; send the whole file again (imports are idempotent).")

// ImportUsers creates or updates projectID's users from r, JSON lines
// (docs/api.md, "Import and export"), and reports what it did. It is
// idempotent on the address: a line whose email a user of the project
// already has updates the fields the line sets (counted as updated), so
// importing the same lines twice creates nothing the second time. Every
// user a line writes is vouched for by the operator (store.User.Vouched):
// its owner's first sign-in by code or link keeps it and verifies it.
// An address held by an unverified account that registered itself (a
// passkey sign-up; replaceable) is the exception: a line saying
// emailVerified true replaces that account as a sign-in proving the
// address would (deleteAccount: user.deleted) and creates the user
// (counted as created); any other line for it is rejected, and an
// import never writes into such an account. A line that is not valid,
// or whose externalUserId another user has, is rejected alone; blank
// lines are skipped. Imports emit no user.registered. It reads r a line
// at a time and commits every ImportChunk lines in a transaction of their
// own: what committed stays when a later chunk, or reading r, fails (the
// error is then returned with the lines done: import again, it is
// idempotent). Errors: 404 PROJECT_NOT_FOUND; 400 VALIDATION_ERROR
// (ErrImportCutShort) when r ends inside its data
// (io.ErrUnexpectedEOF: a body shorter than its announced length); r's
// other errors as they are.
func (s *Service) ImportUsers(ctx context.Context, projectID string, r io.Reader) (*ImportReport, error) {
	if err := s.db.View(ctx, func(tx store.Tx) error {
		_, err := projectTx(tx, projectID)
		return err
	}); err != nil {
		return nil, internal(err)
	}
	rep := &ImportReport{Success: true, Rejected: []ImportRejected{}}
	lr := &lineReader{r: bufio.NewReaderSize(r, MaxImportLine)}
	chunk := make([]*importUser, 0, ImportChunk)
	n := 0
	for {
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		} else if errors.Is(err, io.ErrUnexpectedEOF) {
			return rep, ErrImportCutShort
		} else if err != nil {
			return rep, err
		}
		n++
		if tooLong {
			rep.reject(n, fmt.Sprintf("line is longer than %d bytes", MaxImportLine))
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		u, err := parseImportLine(line)
		if err != nil {
			rep.reject(n, err.Error())
			continue
		}
		u.line = n
		if chunk = append(chunk, u); len(chunk) == ImportChunk {
			if err := s.importChunk(ctx, projectID, chunk, rep); err != nil {
				return rep, internal(err)
			}
			chunk = chunk[:0]
		}
	}
	if err := s.importChunk(ctx, projectID, chunk, rep); err != nil {
		return rep, internal(err)
	}
	return rep, nil
}

// importChunk writes one chunk of checked lines in one transaction and
// adds its counts to rep. Rejections are sorted into rep by line.
func (s *Service) importChunk(ctx context.Context, projectID string, chunk []*importUser, rep *ImportReport) error {
	if len(chunk) == 0 {
		return nil
	}
	var created, updated int
	var rejected []ImportRejected
	emails := make([]string, len(chunk))
	for i, in := range chunk {
		emails[i] = in.email
	}
	err := s.db.Update(ctx, func(tx store.Tx) error {
		created, updated, rejected = 0, 0, nil // the function may run again
		// Chunks of imports into one project take turns: two imports
		// would write the same rows in opposite orders (deadlocks on
		// PostgreSQL).
		if err := tx.Lock("import:" + projectID); err != nil {
			return err
		}
		tx.PrefetchUsers(projectID, emails) // read with the project
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		now := s.now().UTC()
		for _, in := range chunk {
			u, err := tx.UserByEmail(projectID, in.email)
			isNew := errors.Is(err, store.ErrNotFound)
			if err != nil && !isNew {
				return err
			}
			if !isNew {
				replaced, why, err := s.importOnto(tx, u, in)
				if err != nil {
					return err
				} else if why != "" {
					rejected = append(rejected, ImportRejected{in.line, why})
					continue
				}
				isNew = replaced
			}
			if isNew {
				u = &store.User{ID: newID(), ProjectID: projectID, Email: in.email, CreatedAt: now, EmailVerified: boolPtr(false)}
				if !in.createdAt.IsZero() {
					u.CreatedAt = in.createdAt
				}
			}
			if in.ext != nil {
				u.ExternalUserID = *in.ext
			}
			if in.first != nil {
				u.FirstName = *in.first
			}
			if in.company != nil {
				u.CompanyID = *in.company
			}
			if in.verified != nil {
				u.EmailVerified = boolPtr(*in.verified)
			}
			if in.setGroups {
				u.Groups = in.groups
			}
			if in.setMetadata {
				u.Metadata = in.metadata
			}
			u.Vouched = boolPtr(true)
			u.UpdatedAt = now
			if err := tx.PutUser(u); errors.Is(err, store.ErrConflict) {
				rejected = append(rejected, ImportRejected{in.line, whyExternalIDTaken})
				continue
			} else if err != nil {
				return err
			}
			if isNew {
				created++
			} else {
				updated++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.Created += created
	rep.Updated += updated
	if len(rejected) > 0 {
		// Lines rejected before the chunk's transaction are already in
		// rep; merge so the report stays in line order, and keep the
		// first MaxImportRejected (the chunk's lines may come before
		// lines listed since: it began before them).
		rep.RejectedCount += len(rejected)
		first := rejected[0].Line
		i := len(rep.Rejected)
		for i > 0 && rep.Rejected[i-1].Line > first {
			i--
		}
		tail := append([]ImportRejected(nil), rep.Rejected[i:]...)
		rep.Rejected = append(rep.Rejected[:i], mergeRejected(tail, rejected)...)
		if len(rep.Rejected) > MaxImportRejected {
			rep.Rejected = rep.Rejected[:MaxImportRejected]
		}
		rep.RejectedTruncated = rep.RejectedCount > len(rep.Rejected)
	}
	return nil
}

// Why importChunk rejects a line inside its transaction.
const (
	whyUnproven        = "the address belongs to an account registered without proving it: only a line with emailVerified true replaces it"
	whyExternalIDTaken = "externalUserId belongs to another user of the project"
)

// importOnto decides, inside tx, what the line in does to u, the user
// that has its address. It updates u (neither replaced nor a why)
// unless u is an unverified account that registered itself
// (replaceable). Such an account is replaced when the line says
// emailVerified true: deleted as a sign-in proving the address deletes
// it (deleteAccount), so that the line creates a new user; for any
// other line, why is the rejection's text and nothing changed.
func (s *Service) importOnto(tx store.Tx, u *store.User, in *importUser) (replaced bool, why string, err error) {
	if _, err := settleVerified(tx, u); err != nil {
		return false, "", err
	}
	if replace, err := replaceable(tx, u); err != nil || !replace {
		return false, "", err
	}
	if in.verified == nil || !*in.verified {
		return false, whyUnproven, nil
	}
	// The new user's externalUserId must be free before u goes.
	if in.ext != nil && *in.ext != "" {
		if other, err := tx.UserByExternalID(u.ProjectID, *in.ext); err == nil && other.ID != u.ID {
			return false, whyExternalIDTaken, nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, "", err
		}
	}
	return true, "", s.deleteAccount(tx, u)
}

// mergeRejected merges two lists sorted by line.
func mergeRejected(a, b []ImportRejected) []ImportRejected {
	out := make([]ImportRejected, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Line < b[0].Line {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// factorNames returns the names of a user's factors from its summary,
// in a fixed order; never nil.
func factorNames(fs store.FactorSummary) []string {
	out := []string{}
	for _, kind := range []string{factorTOTP, factorSMS} {
		if fs.Factors[kind] == factorEnrolled {
			out = append(out, kind)
		}
	}
	if fs.Passkeys {
		out = append(out, "passkey")
	}
	if fs.BackupCodes {
		out = append(out, "backup_codes")
	}
	return out
}

// ExportUsers calls fn for every user of projectID, in address order, a
// page of users per read transaction, which reads the page's factors in
// one call (FactorSummaries; each page is consistent; the whole
// export is not one snapshot). fn runs outside the transactions (it may
// write to the network); its error stops the export and is returned.
// start, when not nil, is called once the project is found, before the
// first user (so that a caller may answer 404 PROJECT_NOT_FOUND, which
// is returned before start, as a status).
func (s *Service) ExportUsers(ctx context.Context, projectID string, start func() error, fn func(ExportUser) error) error {
	if err := s.db.View(ctx, func(tx store.Tx) error {
		_, err := projectTx(tx, projectID)
		return err
	}); err != nil {
		return internal(err)
	}
	if start != nil {
		if err := start(); err != nil {
			return err
		}
	}
	after := ""
	for {
		var page []ExportUser
		var more bool
		err := s.db.View(ctx, func(tx store.Tx) error {
			page = page[:0]
			users, m, err := tx.Users(projectID, "", after, exportPage)
			if err != nil {
				return err
			}
			more = m
			ids := make([]string, len(users))
			for i, u := range users {
				ids[i] = u.ID
			}
			sums, err := tx.FactorSummaries(projectID, ids)
			if err != nil {
				return err
			}
			for _, u := range users {
				if _, err := settleVerified(tx, u); err != nil {
					return err
				}
				names := factorNames(sums[u.ID])
				page = append(page, ExportUser{ID: u.ID, Email: u.Email, ExternalUserID: nullable(u.ExternalUserID),
					FirstName: nullable(u.FirstName), CompanyID: nullable(u.CompanyID), EmailVerified: isVerified(u),
					Disabled: u.Disabled, CreatedAt: formatTime(u.CreatedAt), Factors: names,
					Groups: viewGroups(u.Groups), Metadata: viewMetadata(u.Metadata)})
			}
			return nil
		})
		if err != nil {
			return internal(err)
		}
		for _, u := range page {
			if err := fn(u); err != nil {
				return err
			}
		}
		if !more || len(page) == 0 {
			return nil
		}
		after = page[len(page)-1].Email
	}
}
