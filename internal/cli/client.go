package cli

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
)

// maxResponse bounds a JSON response body read into memory.
const maxResponse = 64 << 20

// commonFlags are the flags every command takes.
type commonFlags struct {
	server string
	token  string
	data   string
	json   bool
	getenv func(string) string
}

// isCommonFlag reports whether name is one of the flags every command
// takes.
func isCommonFlag(name string) bool {
	switch name {
	case "server", "admin-token", "data", "json":
		return true
	}
	return false
}

// register declares the common flags on fs. The admin token's default is
// deliberately not taken from the environment, so help never shows it.
func (cf *commonFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	cf.getenv = getenv
	fs.StringVar(&cf.server, "server", "", "`URL` of the running server's admin API; env LATCHKEY_SERVER, else the address in <data>.addr, else "+defaultServer)
	fs.StringVar(&cf.token, "admin-token", "", "admin `TOKEN`; env LATCHKEY_ADMIN_TOKEN, else read from <data>.admin-token")
	fs.StringVar(&cf.data, "data", envOr(getenv, "LATCHKEY_DATA", defaultData), "data `FILE` whose .admin-token file holds the token; env LATCHKEY_DATA")
	fs.BoolVar(&cf.json, "json", false, "print the API's JSON response instead of a table")
}

func envOr(getenv func(string) string, name, def string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return def
}

// AddrFile is the file beside the data file in which `latchkey serve`
// writes the address it listens on, for the CLI on the same machine:
// <data>.addr, one line such as http://127.0.0.1:8080.
func AddrFile(data string) string { return data + ".addr" }

// serverURL returns the admin API's base URL and where it came from:
// --server when given (serverSet), else LATCHKEY_SERVER, else the
// address the server wrote beside the data file (AddrFile), else
// defaultServer.
func (cf *commonFlags) serverURL(serverSet bool) (raw, from string, err error) {
	if serverSet {
		return cf.server, "--server", nil
	}
	if v := strings.TrimSpace(cf.getenv("LATCHKEY_SERVER")); v != "" {
		return v, "LATCHKEY_SERVER", nil
	}
	file := AddrFile(cf.data)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return defaultServer, "", nil
	} else if err != nil {
		return "", "", fmt.Errorf("read the server's address: %w (or pass --server)", err)
	}
	return strings.TrimSpace(string(b)), file, nil
}

// client checks the server's URL (serverURL) and returns an admin API
// client; the token is resolved at the first request, so usage errors
// come first.
func (cf *commonFlags) client(env Env, serverSet bool) (*client, error) {
	raw, from, err := cf.serverURL(serverSet)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	fromFile := from == AddrFile(cf.data)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		if fromFile {
			return nil, fmt.Errorf("the server address in %s is not an http:// or https:// URL (%q): pass --server", from, raw)
		}
		return nil, fmt.Errorf("%s must be an http:// or https:// URL, got %q", from, raw)
	}
	u.User = nil
	hc := env.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: requestTimeout}
	}
	c := &client{
		base:      strings.TrimSuffix(u.String(), "/"),
		http:      hc,
		ownClient: env.HTTPClient == nil,
		token:     sync.OnceValues(cf.adminToken),
	}
	if fromFile {
		c.addrFile = from
	}
	return c, nil
}

// adminToken returns --admin-token, else LATCHKEY_ADMIN_TOKEN, else the
// content of <data>.admin-token, whitespace trimmed. Its errors never
// hold the token.
func (cf *commonFlags) adminToken() (string, error) {
	tok, from := strings.TrimSpace(cf.token), "--admin-token"
	if tok == "" {
		tok, from = strings.TrimSpace(cf.getenv("LATCHKEY_ADMIN_TOKEN")), "LATCHKEY_ADMIN_TOKEN"
	}
	if tok == "" {
		file := cf.data + ".admin-token"
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no admin token: pass --admin-token, set LATCHKEY_ADMIN_TOKEN, or point --data (LATCHKEY_DATA) at the server's data file (%s does not exist)", file)
		} else if err != nil {
			return "", fmt.Errorf("read admin token: %w", err)
		}
		tok, from = strings.TrimSpace(string(b)), file
		if tok == "" {
			return "", fmt.Errorf("admin token file %s is empty", file)
		}
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f || r > '~' {
			return "", fmt.Errorf("the admin token from %s is malformed", from)
		}
	}
	return tok, nil
}

// client calls the admin API with the admin token.
type client struct {
	base      string // scheme://host[:port][/prefix], no trailing slash
	http      *http.Client
	ownClient bool // http is ours: backup may replace its timeout
	token     func() (string, error)
	// addrFile is the server's address file when base was read from it
	// (network errors name it).
	addrFile string
}

// apiError is an error answer from the server: the envelope's error and
// code, or the HTTP status when the body is not an envelope.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Body is the envelope as sent, when the answer was one (--json
	// prints it).
	Body []byte
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return fmt.Sprintf("%s (%s)", e.Message, e.Code)
}

// redact replaces the admin token in s, should a message ever hold it.
func (c *client) redact(s string) string {
	if tok, err := c.token(); err == nil && tok != "" {
		s = strings.ReplaceAll(s, tok, "adm_[redacted]")
	}
	return s
}

// request builds an authorized request for path (already escaped) with
// an optional query and JSON body.
func (c *client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	tok, err := c.token()
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "latchkey-cli")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends an admin API call and returns the raw JSON body of a 2xx
// answer; any other answer is an *apiError.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	req, err := c.request(ctx, method, path, query, body)
	if err != nil {
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, c.networkError(err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, readAPIError(res)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("read response from %s: %w", c.base, err)
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("unexpected response from %s: %s is not JSON", c.base, res.Header.Get("Content-Type"))
	}
	return raw, nil
}

// networkError words a transport failure; url.Error already strips any
// password from the URL and the request never carries the token in it.
func (c *client) networkError(err error) error {
	where := c.base
	if c.addrFile != "" {
		// A server that stopped without removing its address file
		// (killed) left it behind.
		where += " (the address in " + c.addrFile + "; is the server running?)"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("cannot reach %s: timed out", where)
		}
		err = ue.Err
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		// The server answered: its certificate is one this machine
		// does not trust (self-signed, a private CA).
		return fmt.Errorf("%s: the server's certificate is signed by an authority this machine does not trust: %s", c.base, trustAdvice(runtime.GOOS))
	}
	return fmt.Errorf("cannot reach %s: %v", where, err)
}

// trustAdvice says how to make a machine running goos trust a
// certificate authority: Go reads SSL_CERT_FILE on Linux and the other
// Unix systems only; macOS and Windows verify with the system's store.
func trustAdvice(goos string) string {
	switch goos {
	case "darwin":
		return "add its CA's (or the certificate's) PEM file to the System keychain as trusted (Keychain Access, or security add-trusted-cert)"
	case "windows":
		return "add its CA's (or the certificate's) file to the Trusted Root Certification Authorities store (certutil -addstore Root FILE)"
	}
	return "set SSL_CERT_FILE to its CA's (or the certificate's) PEM file"
}

// readAPIError decodes the error envelope of a non-2xx answer.
func readAPIError(res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var env struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != "" {
		return &apiError{Status: res.StatusCode, Code: env.Code, Message: env.Error, Body: raw}
	}
	return &apiError{Status: res.StatusCode, Message: "server answered " + res.Status}
}
