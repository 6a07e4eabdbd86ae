package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// User import and export, and mail templates (docs/operations.md,
// "Importing and exporting users"; docs/api.md, "Mail templates").

var userExport = &command{
	name:    "user export",
	summary: "write a project's users as JSON lines",
	help: "Write every user of the project to standard output as JSON lines (no secrets; factors by name):\n" +
		"  latchkey user export --project ID > users.jsonl\n" +
		"The file imports as it is with `latchkey user import`.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			res, err := c.api.stream(ctx, "GET", "/api/v1/admin/projects/"+url.PathEscape(*projectID)+"/users/export", "", nil)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			r := &progressReader{r: res.Body, progress: func() {}}
			n, err := io.Copy(c.out, r)
			if err != nil {
				return fmt.Errorf("export interrupted after %s: %v", count(n, "byte"), err)
			}
			return nil
		}
	},
}

// maxImportBytes is the server's limit on an import body
// (httpapi.MaxImportBytes; a test checks they agree).
const maxImportBytes = 64 << 20

var userImport = &command{
	name:    "user import",
	args:    []string{"FILE"},
	summary: "create or update a project's users from JSON lines",
	help: "Send FILE (JSON lines, one user each: {email, externalUserId?, firstName?, companyId?, emailVerified?, createdAt?,\n" +
		"groups?, metadata?};\n" +
		"at most 64 MiB: a larger file is refused before it is sent; - reads standard input) to the project\n" +
		"and print the report. Idempotent on email: a user that has the line's address is updated, so a file\n" +
		"may be imported again. An imported user's first sign-in by code or link keeps the account. An address\n" +
		"someone registered by passkey without proving it is replaced by a line with emailVerified true and\n" +
		"rejected otherwise. A bad line is rejected alone; the report lists it with its line number (the\n" +
		"first 1,000 rejected lines, and the count of all). Exit 1 when any line was rejected.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var in io.Reader = os.Stdin
			if name := c.args[0]; name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return err
				}
				defer f.Close()
				// A file over the server's limit is refused here, before
				// any of it is sent (and so before any chunk commits).
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > maxImportBytes {
					return fmt.Errorf("%s is %.1f MiB; an import takes at most 64 MiB: split it (split -l 500000 %s part-) and import each part", name, float64(fi.Size())/(1<<20), name)
				}
				in = f
			}
			res, err := c.api.stream(ctx, "POST", "/api/v1/admin/projects/"+url.PathEscape(*projectID)+"/users/import", "application/x-ndjson", in)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
			if err != nil {
				return err
			}
			var rep struct {
				Created  int `json:"created"`
				Updated  int `json:"updated"`
				Rejected []struct {
					Line  int    `json:"line"`
					Error string `json:"error"`
				} `json:"rejected"`
				// RejectedCount counts every rejected line; rejected
				// lists the first 1,000. Absent from an older server.
				RejectedCount *int `json:"rejectedCount"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				return fmt.Errorf("unexpected response: %v", err)
			}
			rejected := len(rep.Rejected)
			if rep.RejectedCount != nil {
				rejected = *rep.RejectedCount
			}
			if c.json {
				if err := printJSON(c.out, raw); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.out, "Created %d, updated %d, rejected %d.\n", rep.Created, rep.Updated, rejected)
				for _, r := range rep.Rejected {
					fmt.Fprintf(c.out, "line %d: %s\n", r.Line, cell(r.Error))
				}
				if rejected > len(rep.Rejected) {
					more, listed := rejected-len(rep.Rejected), count(len(rep.Rejected), "rejected line")+" are"
					if len(rep.Rejected) == 1 {
						listed = "1 rejected line is"
					}
					fmt.Fprintf(c.out, "(the first %s listed; %d more %s rejected)\n", listed, more, wasWere(more))
				}
			}
			if rejected > 0 {
				return fmt.Errorf("%s rejected", count(rejected, "line"))
			}
			return nil
		}
	},
}

// stream sends a request whose body (with contentType) or answer may be
// large: no overall timeout (the server bounds an import or export at
// 30 minutes). A non-2xx answer is an *apiError.
func (c *client) stream(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := c.request(ctx, method, path, nil, nil)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Body = io.NopCloser(body)
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "*/*")
	hc := c.http
	if c.ownClient {
		hc = &http.Client{Timeout: 35 * time.Minute}
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, c.networkError(err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		defer res.Body.Close()
		return nil, readAPIError(res)
	}
	return res, nil
}

// Mail templates.

type template struct {
	Kind      string `json:"kind"`
	Locale    string `json:"locale"`
	Subject   string `json:"subject"`
	Text      string `json:"text"`
	HTML      string `json:"html"`
	UpdatedAt string `json:"updatedAt"`
}

func templatePath(projectID, kind, locale string) string {
	p := "/api/v1/admin/projects/" + url.PathEscape(projectID) + "/templates"
	if kind != "" {
		p += "/" + url.PathEscape(kind) + "/" + url.PathEscape(locale)
	}
	return p
}

// templateFlags declares --project, --kind and --locale.
func templateFlags(fs *flag.FlagSet) (projectID, kind, locale *string) {
	projectID = fs.String("project", "", "project `ID` (required)")
	kind = fs.String("kind", "", "`KIND`: otp, magic_link, email_change or email_changed_notice (required)")
	locale = fs.String("locale", "", "BCP 47 `TAG`: en, pt, pt-BR... (required)")
	return
}

func requireTemplateFlags(c *call, names ...string) error {
	for _, n := range names {
		if !c.set[n] {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

// templateBody reads the draft's parts from --subject, --text-file and
// --html-file (only those given).
func templateBody(c *call, subject, textFile, htmlFile string) (map[string]string, error) {
	body := map[string]string{}
	if c.set["subject"] {
		body["subject"] = subject
	}
	for flagName, part := range map[string]string{"text-file": "text", "html-file": "html"} {
		if !c.set[flagName] {
			continue
		}
		name := map[string]string{"text-file": textFile, "html-file": htmlFile}[flagName]
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		body[part] = string(b)
	}
	return body, nil
}

var templateList = &command{
	name:    "template list",
	summary: "list a project's mail templates",
	help:    "List the project's mail templates by kind and locale. Kinds and locales without one send the built-in English.",
	flags: func(fs *flag.FlagSet) action {
		projectID := fs.String("project", "", "project `ID` (required)")
		return func(ctx context.Context, c *call) error {
			if !c.set["project"] {
				return usagef("--project is required")
			}
			var resp struct {
				Templates []template `json:"templates"`
			}
			return c.send(ctx, "GET", templatePath(*projectID, "", ""), nil, nil, &resp, func() error {
				if len(resp.Templates) == 0 {
					_, err := fmt.Fprintln(c.out, "No templates: every mail is the built-in English.")
					return err
				}
				t := newTable(c.out, "KIND", "LOCALE", "SUBJECT", "UPDATED")
				for _, x := range resp.Templates {
					t.row(x.Kind, x.Locale, x.Subject, humanTime(x.UpdatedAt))
				}
				return t.flush()
			})
		}
	},
}

var templatePut = &command{
	name:    "template put",
	summary: "upload a mail template",
	help: "Create or replace the project's template of --kind in --locale: --subject, and the parts from --text-file\n" +
		"and --html-file (Go templates; fields {{.Project}}, {{.Email}}, {{.Code}}, {{.Link}}, {{.ExpiresInMinutes}}, {{.NewEmailMasked}}).\n" +
		"The server checks them on sample data; an error names the part and the line.",
	flags: func(fs *flag.FlagSet) action {
		projectID, kind, locale := templateFlags(fs)
		subject := fs.String("subject", "", "subject `TEMPLATE` (required)")
		textFile := fs.String("text-file", "", "`FILE` holding the text part's template (required)")
		htmlFile := fs.String("html-file", "", "`FILE` holding the HTML part's template (required)")
		return func(ctx context.Context, c *call) error {
			if err := requireTemplateFlags(c, "project", "kind", "locale", "subject", "text-file", "html-file"); err != nil {
				return err
			}
			body, err := templateBody(c, *subject, *textFile, *htmlFile)
			if err != nil {
				return err
			}
			var resp struct {
				Template template `json:"template"`
			}
			return c.send(ctx, "PUT", templatePath(*projectID, *kind, *locale), nil, body, &resp, func() error {
				_, err := fmt.Fprintf(c.out, "Stored the %s template for %s.\n", resp.Template.Kind, resp.Template.Locale)
				return err
			})
		}
	},
}

var templateDelete = &command{
	name:    "template delete",
	summary: "delete a mail template (the built-in applies again)",
	help:    "Delete the project's template of --kind in --locale: that locale falls back again, in the end to the built-in English.",
	flags: func(fs *flag.FlagSet) action {
		projectID, kind, locale := templateFlags(fs)
		return func(ctx context.Context, c *call) error {
			if err := requireTemplateFlags(c, "project", "kind", "locale"); err != nil {
				return err
			}
			return c.send(ctx, "DELETE", templatePath(*projectID, *kind, *locale), nil, nil, nil, func() error {
				_, err := fmt.Fprintln(c.out, "Deleted.")
				return err
			})
		}
	},
}

var templatePreview = &command{
	name:    "template preview",
	summary: "render a mail template on sample data",
	help: "Print what a user asking for --locale receives for --kind, rendered on sample data; with --subject,\n" +
		"--text-file or --html-file, the draft they give instead (nothing is stored).",
	flags: func(fs *flag.FlagSet) action {
		projectID, kind, locale := templateFlags(fs)
		subject := fs.String("subject", "", "draft subject `TEMPLATE`")
		textFile := fs.String("text-file", "", "draft text part from `FILE`")
		htmlFile := fs.String("html-file", "", "draft HTML part from `FILE`")
		return func(ctx context.Context, c *call) error {
			if err := requireTemplateFlags(c, "project", "kind", "locale"); err != nil {
				return err
			}
			body, err := templateBody(c, *subject, *textFile, *htmlFile)
			if err != nil {
				return err
			}
			var resp struct {
				Subject string  `json:"subject"`
				Text    string  `json:"text"`
				HTML    string  `json:"html"`
				Locale  *string `json:"locale"`
				BuiltIn bool    `json:"builtIn"`
			}
			return c.send(ctx, "POST", templatePath(*projectID, *kind, *locale)+"/preview", nil, body, &resp, func() error {
				from := "built-in English"
				if resp.Locale != nil {
					from = "template " + *resp.Locale
				}
				_, err := fmt.Fprintf(c.out, "From: %s\nSubject: %s\n\n--- text ---\n%s\n--- html ---\n%s\n", from, resp.Subject,
					strings.TrimRight(resp.Text, "\n"), strings.TrimRight(resp.HTML, "\n"))
				return err
			})
		}
	},
}
