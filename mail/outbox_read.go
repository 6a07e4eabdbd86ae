package mail

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Limits of ReadOutbox: whatever the directory holds, a listing reads at
// most MaxOutboxScan files of at most MaxOutboxFile bytes each.
const (
	// MaxOutboxFile is the largest .eml file ReadOutbox opens; larger
	// ones are skipped with a note (latchkey's own are a few KiB).
	MaxOutboxFile = 1 << 20
	// MaxOutboxScan is how many files one listing reads at most, newest
	// first, to find its messages (a project filter skips the others').
	MaxOutboxScan = 500
	// DefaultOutboxLimit is how many messages a listing returns when
	// OutboxQuery.Limit is 0.
	DefaultOutboxLimit = 50
)

// OutboxQuery selects the messages of an outbox listing.
type OutboxQuery struct {
	// ProjectID keeps only the messages of this project (their
	// X-Latchkey-Project header); empty: every message.
	ProjectID string
	// Before keeps only the files whose names sort before it (the
	// cursor of the previous listing's Older); empty: from the newest.
	Before string
	// Limit is the most messages returned (0: DefaultOutboxLimit).
	Limit int
}

// OutboxListing is a page of an outbox directory, newest first.
type OutboxListing struct {
	Messages []*OutboxMessage
	// Skipped are the files among those read that could not be shown.
	Skipped []OutboxSkip
	// Older, when set, is the Before of the next (older) page: more
	// files remain.
	Older string
	// Capped says the listing stopped after MaxOutboxScan files
	// without filling its page (a project filter that matched few).
	Capped bool
}

// OutboxMessage is one .eml file of an outbox, parsed: the headers, the
// decoded text and HTML parts, and what the Outbox recorded beside them
// (empty in files written without it).
type OutboxMessage struct {
	File              string // the file's name in the directory
	From, To, Subject string
	Date              time.Time
	Text, HTML        string
	ProjectID, Kind   string
	Code, Link        string
}

// OutboxSkip is a file ReadOutbox could not show, and why.
type OutboxSkip struct {
	File, Reason string
}

// ReadOutbox lists the .eml files of dir, newest first: the Outbox
// names each file by its UTC time, so name order is time order. Hidden
// files (a write in progress) and other names are ignored; a file that
// is not a regular file, is larger than MaxOutboxFile or does not parse
// is listed in Skipped and the listing goes on. A directory that does
// not exist yet is an empty listing; any other failure to read the
// directory is returned.
func ReadOutbox(dir string, q OutboxQuery) (*OutboxListing, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultOutboxLimit
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &OutboxListing{}, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	types := map[string]fs.FileMode{}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".eml") || (q.Before != "" && n >= q.Before) {
			continue
		}
		names = append(names, n)
		types[n] = e.Type()
	}
	slices.Sort(names)
	slices.Reverse(names)
	out := &OutboxListing{}
	for i, n := range names {
		if len(out.Messages) == limit {
			out.Older = names[i-1]
			break
		}
		if i == MaxOutboxScan {
			out.Older, out.Capped = names[i-1], true
			break
		}
		if !types[n].IsRegular() {
			out.Skipped = append(out.Skipped, OutboxSkip{n, "not a regular file"})
			continue
		}
		m, err := readOutboxFile(filepath.Join(dir, n))
		if err != nil {
			out.Skipped = append(out.Skipped, OutboxSkip{n, err.Error()})
			continue
		}
		m.File = n
		if q.ProjectID != "" && m.ProjectID != q.ProjectID {
			continue
		}
		out.Messages = append(out.Messages, m)
	}
	return out, nil
}

// readOutboxFile reads and parses one file, at most MaxOutboxFile bytes.
func readOutboxFile(path string) (*OutboxMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("cannot be read")
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxOutboxFile+1))
	if err != nil {
		return nil, errors.New("cannot be read")
	}
	if len(raw) > MaxOutboxFile {
		return nil, fmt.Errorf("larger than %d KiB", MaxOutboxFile>>10)
	}
	return parseOutboxMessage(raw)
}

// parseOutboxMessage parses an .eml file's bytes: the headers (the
// subject's encoded words decoded), the X-Latchkey-* headers the Outbox
// adds, and the text and HTML parts of a multipart/alternative message
// or its single text part. Errors say in a few words what is wrong.
func parseOutboxMessage(raw []byte) (*OutboxMessage, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil, errors.New("not an email message")
	}
	h := msg.Header
	var dec mime.WordDecoder
	m := &OutboxMessage{From: h.Get("From"), To: h.Get("To"), Subject: h.Get("Subject"),
		ProjectID: h.Get(HeaderProject), Kind: h.Get(HeaderKind), Code: h.Get(HeaderCode), Link: h.Get(HeaderLink)}
	if s, err := dec.DecodeHeader(m.Subject); err == nil {
		m.Subject = s
	}
	if d, err := h.Date(); err == nil {
		m.Date = d
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		mt = "text/plain" // RFC 2045's default
	}
	if !strings.HasPrefix(mt, "multipart/") {
		body, err := decodePart(msg.Body, h.Get("Content-Transfer-Encoding"))
		if err != nil {
			return nil, err
		}
		switch mt {
		case "text/html":
			m.HTML = body
		case "text/plain":
			m.Text = body
		default:
			return nil, fmt.Errorf("not a text message (%s)", mt)
		}
		return m, nil
	}
	if params["boundary"] == "" {
		return nil, errors.New("multipart message without a boundary")
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errors.New("broken MIME structure")
		}
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if pt != "text/plain" && pt != "text/html" {
			continue
		}
		body, err := decodePart(p, p.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return nil, err
		}
		if pt == "text/html" && m.HTML == "" {
			m.HTML = body
		} else if pt == "text/plain" && m.Text == "" {
			m.Text = body
		}
	}
	if m.Text == "" && m.HTML == "" {
		return nil, errors.New("no text or HTML part")
	}
	return m, nil
}

// decodePart reads a part's body under its transfer encoding, with CRLF
// line ends made LF.
func decodePart(r io.Reader, encoding string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &newlineDropper{r})
	case "", "7bit", "8bit", "binary":
	default:
		return "", fmt.Errorf("unknown transfer encoding %q", encoding)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", errors.New("a part does not decode")
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n"), nil
}

// newlineDropper drops CR and LF, for base64 bodies split in lines.
type newlineDropper struct{ r io.Reader }

func (d *newlineDropper) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	j := 0
	for _, c := range p[:n] {
		if c != '\r' && c != '\n' {
			p[j] = c
			j++
		}
	}
	return j, err
}
