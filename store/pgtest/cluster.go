// Package pgtest starts a throwaway PostgreSQL cluster on loopback for
// tests, and hands each test a database of its own.
//
// The cluster runs the Debian (or any local) PostgreSQL binaries as an
// unprivileged user when the tests run as root (PostgreSQL refuses to run
// as root), keeps its data and socket in a temporary directory, listens on
// 127.0.0.1 only, trusts local connections, and trades durability for
// speed (fsync off; StartWith with Durable keeps it on, for benchmarks):
// it is for tests, never for data. It dies with the test process.
//
// LATCHKEY_TEST_DATABASE_URL, when set, names an existing server to use
// instead (a superuser URL: tests create and drop databases on it).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL names an existing server for tests (a superuser URL).
const EnvURL = "LATCHKEY_TEST_DATABASE_URL"

// ErrNoPostgres is returned by Start when no PostgreSQL server binaries
// are installed and EnvURL is unset.
var ErrNoPostgres = errors.New("pgtest: no PostgreSQL server binaries found (install Debian's postgresql package, or set " + EnvURL + ")")

// Cluster is a running PostgreSQL server for tests.
type Cluster struct {
	// URL is a superuser connection URL to the maintenance database.
	URL string

	dir string    // data directory; empty for a server named by EnvURL
	cmd *exec.Cmd // the postmaster; nil for a server named by EnvURL
	// The postmaster's binary, arguments and user, to start it again
	// (Resume).
	postgres string
	args     []string
	cred     *syscall.Credential
	exited   chan struct{} // closed when cmd has exited
	seq      atomic.Int64
	base     string // random prefix of the databases this process creates

	tmplMu  sync.Mutex
	tmplURL string // the template database (Template), once made
	// The template's schema (fingerprint), the statements that empty a
	// copy of it (clean), and the copies emptied and ready again (free):
	// see recycle.
	tmplPrint string
	tmplClean string
	tmplCount string // counts the rows a copy holds but its migrations
	free      []string
}

// Options tune StartWith.
type Options struct {
	// Durable keeps PostgreSQL's durability settings (fsync,
	// synchronous_commit, full_page_writes on, as a production server
	// runs), for benchmarks; tests turn them off for speed.
	Durable bool
	// SharedBuffers is the server's shared_buffers (default 64MB).
	SharedBuffers string
	// Socket makes the cluster's URLs reach it through its Unix socket
	// rather than loopback TCP, as a server on the same machine is best
	// reached (benchmarks).
	Socket bool
}

// Start starts a throwaway cluster for tests (fsync off), or connects
// to the server EnvURL names. Stop it when the tests are done.
func Start() (*Cluster, error) { return StartWith(Options{}) }

// StartWith is Start with options. With EnvURL set, the options do not
// apply: the server is whatever it is.
func StartWith(opt Options) (*Cluster, error) {
	c := &Cluster{base: "t" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + strconv.Itoa(os.Getpid())}
	if u := os.Getenv(EnvURL); u != "" {
		c.URL = u
		return c, c.ping()
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "latchkey-pgtest-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	cred, err := runAs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "latchkey", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, lastLines(out))
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	buffers := opt.SharedBuffers
	if buffers == "" {
		buffers = "64MB"
	}
	args := []string{"-D", data,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "unix_socket_directories=" + dir,
		"-c", "max_connections=300", "-c", "shared_buffers=" + buffers,
		"-c", "log_min_messages=fatal", "-c", "logging_collector=off"}
	if !opt.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	c.postgres, c.args, c.cred = filepath.Join(bin, "postgres"), args, cred
	if err := c.launch(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.URL = fmt.Sprintf("postgres://latchkey@127.0.0.1:%d/postgres?sslmode=disable", port)
	if opt.Socket {
		c.URL = fmt.Sprintf("postgres://latchkey@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(dir), port)
	}
	if err := c.awaitReady(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// launch starts the postmaster, its output appended to postgres.log.
func (c *Cluster) launch() error {
	c.cmd = exec.Command(c.postgres, c.args...)
	log, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	c.cmd.Stdout, c.cmd.Stderr = log, log
	// The cluster dies with the test process, even on kill -9 of it:
	// SIGQUIT is PostgreSQL's immediate shutdown.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	return nil
}

// awaitReady waits until the postmaster accepts connections (30 s at
// most).
func (c *Cluster) awaitReady() error {
	exited := make(chan struct{})
	cmd := c.cmd
	go func() { cmd.Wait(); close(exited) }()
	c.exited = exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.ping()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
		default:
			if time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		out, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		return fmt.Errorf("pgtest: postgres did not start: %v: %s", err, lastLines(out))
	}
}

// Pause shuts the server down as `pg_ctl stop -m fast` does (SIGINT:
// open sessions end with SQLSTATE 57P01, new connections are refused)
// and waits until it has exited; its data stays for Resume. Only for a
// cluster this process started, never the shared one.
func (c *Cluster) Pause() error {
	if c.cmd == nil {
		return errors.New("pgtest: the server named by " + EnvURL + " cannot be paused")
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("pgtest: postgres did not stop within 30 s")
	}
}

// Resume starts a paused server again on the same port and data, and
// returns once it accepts connections (until then, connecting is
// refused, then answered with SQLSTATE 57P03 while it starts up).
func (c *Cluster) Resume() error {
	if err := c.launch(); err != nil {
		return err
	}
	return c.awaitReady()
}

// Stop stops the cluster and removes its files; for a server named by
// EnvURL it drops nothing (each database is dropped by its own cleanup).
func (c *Cluster) Stop() error {
	if c == nil || c.cmd == nil {
		return nil
	}
	if c.cmd.Process != nil && c.exited != nil {
		c.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
	}
	return os.RemoveAll(c.dir)
}

// NewDatabase creates an empty database and returns its URL and a
// function that drops it.
func (c *Cluster) NewDatabase(ctx context.Context) (string, func(), error) {
	return c.NewDatabaseFrom(ctx, "")
}

// Template returns the URL of the cluster's template database: a new
// database that migrate brought to the whole schema, made on the first
// call (later calls return it; it is dropped with the cluster). Tests
// copy it with NewDatabaseFrom instead of migrating each database.
func (c *Cluster) Template(migrate func(ctx context.Context, url string) error) (string, error) {
	c.tmplMu.Lock()
	defer c.tmplMu.Unlock()
	if c.tmplURL != "" {
		return c.tmplURL, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, _, err := c.NewDatabase(ctx)
	if err != nil {
		return "", err
	}
	if err := migrate(ctx, u); err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, fingerprint).Scan(&c.tmplPrint); err != nil {
		return "", err
	}
	if err := conn.QueryRow(ctx, cleaning).Scan(&c.tmplClean); err != nil {
		return "", err
	}
	if err := conn.QueryRow(ctx, counting).Scan(&c.tmplCount); err != nil {
		return "", err
	}
	c.tmplURL = u
	return u, nil
}

// fingerprint sums up a database's schema: its tables' columns, its
// indexes and its applied migrations. Two databases with the same sum
// have the same schema.
const fingerprint = `SELECT md5(coalesce(string_agg(x, E'\n' ORDER BY x), '')) FROM (
	SELECT 'c ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') || ' ' || coalesce(generation_expression, '') AS x
		FROM information_schema.columns WHERE table_schema = 'public'
	UNION ALL SELECT 'i ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
	UNION ALL SELECT 'k ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
	UNION ALL SELECT 'm ' || version || ' ' || name FROM schema_migrations) s`

// cleaning builds the statements that bring a copy of a database back to
// its template's state when the template has no rows but its migrations
// (a migrated schema): every other table emptied, every sequence
// restarted.
const cleaning = `SELECT 'SET lock_timeout = ''5s'';' ||
	coalesce((SELECT string_agg('DELETE FROM ' || quote_ident(tablename) || ';', '' ORDER BY tablename)
		FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'), '') ||
	coalesce((SELECT string_agg('SELECT setval(' || quote_literal(quote_ident(sequencename)) || ', ' || start_value || ', false);', '' ORDER BY sequencename)
		FROM pg_sequences WHERE schemaname = 'public'), '')`

// stillEmpty reports whether the recycled copy at u holds no row but its
// migrations: a process of the test before may have written to it after
// it was emptied (a server it spawned, still stopping).
func (c *Cluster) stillEmpty(ctx context.Context, u string) bool {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return false
	}
	defer conn.Close(ctx)
	var rows int64
	return conn.QueryRow(ctx, c.tmplCount).Scan(&rows) == nil && rows == 0
}

// counting builds the statement that counts a copy's rows outside its
// migrations.
const counting = `SELECT 'SELECT 0' || coalesce((SELECT string_agg(' + (SELECT count(*) FROM ' || quote_ident(tablename) || ')', '' ORDER BY tablename)
	FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'), '')`

// takeFree returns a recycled copy of the template, or "" when none is
// ready.
func (c *Cluster) takeFree() string {
	c.tmplMu.Lock()
	defer c.tmplMu.Unlock()
	n := len(c.free)
	if n == 0 {
		return ""
	}
	name := c.free[n-1]
	c.free = c.free[:n-1]
	return name
}

// recycle brings the template's copy name back to the template's state
// and keeps it for the next NewDatabaseFrom of the template, instead of
// dropping it: copying the migrated template costs PostgreSQL hundreds
// of milliseconds (a file per table and index), emptying a test's few
// rows a few. It ends the copy's other sessions first. A copy whose
// schema a test changed (its fingerprint differs), or that cannot be
// emptied, is dropped instead.
func (c *Cluster) recycle(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok := func() bool {
		u, err := c.databaseURL(name)
		if err != nil {
			return false
		}
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return false
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
			return false
		}
		var print string
		if err := conn.QueryRow(ctx, fingerprint).Scan(&print); err != nil || print != c.tmplPrint {
			return false
		}
		_, err = conn.Exec(ctx, c.tmplClean)
		return err == nil
	}()
	if !ok {
		c.drop(name)
		return
	}
	c.tmplMu.Lock()
	c.free = append(c.free, name)
	c.tmplMu.Unlock()
}

// drop drops the database name, ending its sessions.
func (c *Cluster) drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// databaseURL returns the URL of the database name on the cluster.
func (c *Cluster) databaseURL(name string) (string, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// NewDatabaseFrom creates a database as a copy of the database at
// template (a URL NewDatabase returned, no longer connected to; empty:
// an empty database) and returns its URL and a function that drops it.
// (A copy costs what creating an empty database costs, about as much
// as applying latchkey's schema: it saves the client's share of that.)
// Copies of the cluster's Template are recycled rather than dropped:
// the function empties the copy, and a later call hands it out again,
// as the template left it (see recycle).
func (c *Cluster) NewDatabaseFrom(ctx context.Context, template string) (string, func(), error) {
	recycled := false
	if template != "" { // (Template holds tmplMu while it makes an empty one)
		c.tmplMu.Lock()
		recycled = template == c.tmplURL && c.tmplClean != ""
		c.tmplMu.Unlock()
	}
	if recycled {
		for name := c.takeFree(); name != ""; name = c.takeFree() {
			u, err := c.databaseURL(name)
			if err != nil {
				return "", nil, err
			}
			if c.stillEmpty(ctx, u) {
				return u, func() { c.recycle(name) }, nil
			}
			c.drop(name) // written to after it was emptied
		}
	}
	name := fmt.Sprintf("%s_%d", c.base, c.seq.Add(1))
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		t, err := url.Parse(template)
		if err != nil {
			return "", nil, err
		}
		create += " TEMPLATE " + pgx.Identifier{strings.TrimPrefix(t.Path, "/")}.Sanitize()
	}
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	// A template's last connection may still be closing on the server
	// (55006, "being accessed by other users"): try again briefly.
	for try := 0; ; try++ {
		_, err = conn.Exec(ctx, create)
		var pe *pgconn.PgError
		if err == nil || try == 50 || !errors.As(err, &pe) || pe.Code != "55006" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return "", nil, err
	}
	u, err := c.databaseURL(name)
	if err != nil {
		return "", nil, err
	}
	if recycled {
		return u, func() { c.recycle(name) }, nil
	}
	return u, func() { c.drop(name) }, nil
}

func (c *Cluster) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
)

// Shared returns one cluster for the whole test process, started on
// first use. Call StopShared from TestMain after m.Run.
func Shared() (*Cluster, error) {
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	return shared, sharedErr
}

// StopShared stops the cluster Shared started, if any.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// binDir finds the PostgreSQL server binaries: pg_config's bindir, then
// Debian's /usr/lib/postgresql/<version>/bin (newest first), then PATH.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if isFile(filepath.Join(d, "postgres")) && isFile(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	for _, d := range matches {
		if isFile(filepath.Join(d, "postgres")) && isFile(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// runAs returns the credential the server runs under: nil when the
// process is not root; otherwise the "postgres" user when it exists,
// else "nobody". dir is handed to that user.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return nil, fmt.Errorf("pgtest: running as root and neither a postgres nor a nobody user exists")
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// The temporary directory's parents must be traversable by that user.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, " | ")
}
