package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// call is one parsed command invocation.
type call struct {
	api  *client
	out  io.Writer
	json bool
	data string          // --data, the local data file
	args []string        // positional arguments
	set  map[string]bool // flags given on the command line
	// lastBody is the body of the last successful send.
	lastBody []byte
}

// send makes an admin API call. With --json it prints the response body
// indented, the error envelope too (the error is still returned, for the
// message on stderr and exit 1); otherwise it decodes the body into resp
// (when not nil) and calls render.
func (c *call) send(ctx context.Context, method, path string, query url.Values, body, resp any, render func() error) error {
	raw, err := c.api.do(ctx, method, path, query, body)
	if err != nil {
		var ae *apiError
		if c.json && errors.As(err, &ae) && len(ae.Body) > 0 {
			printJSON(c.out, ae.Body)
		}
		return err
	}
	c.lastBody = raw
	if c.json {
		return printJSON(c.out, raw)
	}
	if resp != nil {
		if err := json.Unmarshal(raw, resp); err != nil {
			return fmt.Errorf("unexpected response from %s: %v", c.api.base, err)
		}
	}
	return render()
}

// printJSON writes raw indented, keeping the server's field order.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}

// table writes aligned columns: a header row, then rows in the order given.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, strings.Join(header, "\t"))
	return t
}

// row writes one row; cells are cleaned of control characters, so data
// from end users (emails, user agents) cannot break the layout or send
// escape sequences to the terminal.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// cell returns s fit for a table cell: control characters become spaces,
// and an empty value is "-".
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// details writes "label: value" lines aligned, for one object.
func details(w io.Writer, pairs ...string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], cell(pairs[i+1]))
	}
	return tw.Flush()
}

// humanTime shows an API timestamp (RFC 3339) as "2006-01-02 15:04:05 UTC";
// empty is "-", an unparsable value is shown as sent.
func humanTime(s string) string {
	if s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// humanSeconds shows a duration in seconds compactly: 86400 is "1d",
// 5400 is "1h30m", 300 is "5m".
func humanSeconds(n int) string {
	if n <= 0 {
		return strconv.Itoa(n) + "s"
	}
	var b strings.Builder
	for _, u := range []struct {
		secs int
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}} {
		if n >= u.secs {
			fmt.Fprintf(&b, "%d%s", n/u.secs, u.name)
			n %= u.secs
		}
	}
	return b.String()
}

// list joins a string list for a cell; empty is "-".
func list(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ",")
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// pathID escapes one path segment taken from the command line.
func pathID(s string) string { return url.PathEscape(s) }
