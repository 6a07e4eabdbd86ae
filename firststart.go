package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"latchkey/internal/cli"
	"latchkey/store"
)

// firstStart creates the default project, a test key and the admin
// token, printing them once; the admin token also goes to
// <data>.admin-token (0600) unless it is configured.
func (m *Main) firstStart(ctx context.Context, baseURL string) error {
	b, err := m.Service.Init(ctx)
	if err != nil {
		return err
	}
	if b == nil {
		// A replica starting at the same time initialized the database
		// and printed what it created.
		return m.ensureAdminToken(ctx)
	}
	w := m.Stdout
	fmt.Fprintf(w, "latchkey: first start: created project %q (%s), allowed origins %s\n", b.Project.Name, b.Project.ID, strings.Join(b.Project.AllowedOrigins, ", "))
	fmt.Fprintf(w, "  passkey demo page: %s/demo/passkeys\n", browserURL(baseURL))
	fmt.Fprintf(w, "  test API key (shown once): %s\n", b.APIKey)
	if b.AdminToken != "" {
		m.showAdminToken(b.AdminToken)
	}
	return nil
}

// browserURL is baseURL as a browser should open it for passkeys: a
// loopback address becomes localhost, since WebAuthn refuses IP
// addresses.
func browserURL(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return baseURL
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && a.Unmap().IsLoopback() {
		port := u.Port()
		u.Host = "localhost"
		if port != "" {
			u.Host += ":" + port
		}
	}
	return u.String()
}

// ensureAdminToken gives a later start an admin token when none is
// configured and none is stored (the first start had one configured):
// it generates one and shows it as a first start does.
func (m *Main) ensureAdminToken(ctx context.Context) error {
	tok, err := m.Service.EnsureAdminToken(ctx)
	if err != nil || tok == "" {
		return err
	}
	fmt.Fprintln(m.Stdout, "latchkey: no admin token is configured or stored: generated one")
	m.showAdminToken(tok)
	return nil
}

// showAdminToken prints a generated admin token once and writes it to
// <data>.admin-token (0600) for the CLI; with a database URL there is no
// data file to put it beside, so it is only printed.
func (m *Main) showAdminToken(tok string) {
	w := m.Stdout
	fmt.Fprintf(w, "  admin token (shown once):  %s\n", tok)
	if m.Config.DatabaseURL != "" {
		fmt.Fprintln(w, "  pass it to the CLI with --admin-token or LATCHKEY_ADMIN_TOKEN")
		return
	}
	file := m.Config.Data + ".admin-token"
	// Replace a file left over from an earlier data file of the same
	// name. The token is committed and printed already, so a failure
	// here is reported, not fatal.
	if err := store.ReplaceSecretFile(file, tok+"\n"); err != nil {
		m.Logger.Error("could not write the admin token file; pass the printed token to the CLI instead", "file", file, "err", err)
	} else {
		fmt.Fprintf(w, "  admin token saved to %s (mode 0600) for the CLI\n", file)
	}
}

// writeAddrFile writes the address the server listens on to
// <data>.addr (cli.AddrFile; mode 0600, as the admin token file beside
// it), so that the CLI on this machine finds the server without --server
// whatever the port. An unspecified address (0.0.0.0, ::) is written as
// 127.0.0.1, where the CLI reaches it. Close removes the file; after a
// crash it stays until the next start replaces it. Failing to write it is
// logged, not fatal: --server still works.
func (m *Main) writeAddrFile(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		// 0.0.0.0, or :: (":8080"), which Go listens on for IPv4 too.
		ip = net.IPv4(127, 0, 0, 1)
	}
	m.writeAddrURL("http://" + net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port)))
}

// writeAddrURL writes the URL the CLI on this machine reaches the server
// at (the base URL when it serves HTTPS: its certificate names that
// host) to the address file beside the data file.
func (m *Main) writeAddrURL(u string) {
	file := cli.AddrFile(m.Config.Data)
	if err := store.ReplaceFileUnsynced(file, u+"\n"); err != nil {
		m.Logger.Warn("could not write the address file for the CLI; pass it --server", "file", file, "err", err)
		return
	}
	m.addrFile = file
}
