package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"latchkey/store"
)

// TestUnavailableSQLSTATEs: an error PostgreSQL answers with a
// connection's SQLSTATE (class 08, 57P01-57P03, 57P05, 53300) is
// store.ErrUnavailable, bare or wrapped, from a statement path
// (unavailable) and from a transaction function (lost); a statement's
// own SQLSTATE (a constraint, a serialization failure, a cancelled query,
// a read-only transaction) is left as PostgreSQL answered it.
func TestUnavailableSQLSTATEs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"57P03", true}, // cannot_connect_now: the server is starting up
		{"57P01", true}, // admin_shutdown
		{"57P02", true}, // crash_shutdown
		{"57P05", true}, // idle_session_timeout
		{"53300", true}, // too_many_connections
		{"08000", true}, // connection_exception
		{"08003", true}, // connection_does_not_exist
		{"08006", true}, // connection_failure
		{"08001", true}, // sqlclient_unable_to_establish_sqlconnection
		{"08004", true}, // sqlserver_rejected_establishment_of_sqlconnection
		{"08P01", true}, // protocol_violation
		{"23505", false},
		{"40001", false},
		{"40P01", false},
		{"42P01", false},
		{"57014", false}, // query_canceled
		{"25006", false}, // read_only_sql_transaction
		{"28P01", false}, // invalid_password, outside a connection attempt
	} {
		pe := &pgconn.PgError{Severity: "FATAL", Code: tc.code, Message: "test"}
		for _, err := range []error{pe, fmt.Errorf("statement: %w", pe)} {
			for name, f := range map[string]func(error) error{"unavailable": unavailable, "lost": lost} {
				got := f(err)
				if errors.Is(got, store.ErrUnavailable) != tc.want {
					t.Errorf("%s(%v) = %v: unavailable %v, want %v", name, err, got, !tc.want, tc.want)
				}
				if !errors.As(got, new(*pgconn.PgError)) {
					t.Errorf("%s(%v) = %v lost the PgError", name, err, got)
				}
			}
		}
	}
	// lost leaves a transaction function's own errors alone, and wraps
	// nothing twice.
	for _, err := range []error{errors.New("the function's own"), store.ErrNotFound, context.Canceled, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		if got := lost(err); got != err {
			t.Errorf("lost(%v) = %v, want it unchanged", err, got)
		}
	}
	once := fmt.Errorf("%w: %w", store.ErrUnavailable, &pgconn.PgError{Code: "57P03"})
	if lost(once) != once || unavailable(once) != once {
		t.Error("an error already ErrUnavailable is wrapped again")
	}
}

// fakeServer listens on loopback and speaks PostgreSQL's protocol: it
// reads each client's startup message (refusing SSL) and hands the
// connection to serve. It returns the URL to connect to.
func fakeServer(t *testing.T, serve func(be *pgproto3.Backend, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				for {
					msg, err := be.ReceiveStartupMessage()
					if err != nil {
						return
					}
					switch msg.(type) {
					case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
						c.Write([]byte("N"))
						continue
					}
					break
				}
				serve(be, c)
			}()
		}
	}()
	return "postgres://latchkey@" + ln.Addr().String() + "/latchkey?sslmode=disable&connect_timeout=5"
}

// ready answers the startup as a server that accepts the connection, and
// reads the client's messages up to its first Query or Sync.
func ready(be *pgproto3.Backend) bool {
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "15.0"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return false
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return false
		}
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Sync:
			return true
		}
	}
}

// TestUnavailableOverTheWire: what pgx returns for real exchanges with a
// server that is down, starting up, shutting down or gone is
// ErrUnavailable; an error answered to the statement is not.
func TestUnavailableOverTheWire(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "postgres://latchkey@" + closed.Addr().String() + "/latchkey?sslmode=disable&connect_timeout=5"
	closed.Close()

	fatal := func(code, msg string) func(*pgproto3.Backend, net.Conn) {
		return func(be *pgproto3.Backend, _ net.Conn) {
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: code, Message: msg})
			be.Flush()
		}
	}
	afterReady := func(answer func(*pgproto3.Backend)) func(*pgproto3.Backend, net.Conn) {
		return func(be *pgproto3.Backend, _ net.Conn) {
			if ready(be) {
				answer(be)
				be.Flush()
			}
		}
	}
	for _, tc := range []struct {
		name string
		url  string
		want bool
	}{
		{"connection refused", refused, true},
		{"57P03 starting up", fakeServer(t, fatal("57P03", "the database system is starting up")), true},
		{"53300 too many clients", fakeServer(t, fatal("53300", "sorry, too many clients already")), true},
		{"57P01 shutting down mid-session", fakeServer(t, afterReady(func(be *pgproto3.Backend) {
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"})
		})), true},
		{"57P02 crash mid-session", fakeServer(t, afterReady(func(be *pgproto3.Backend) {
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P02", Message: "terminating connection because of crash of another server process"})
		})), true},
		{"closed mid-statement", fakeServer(t, afterReady(func(*pgproto3.Backend) {})), true},
		{"reset mid-statement", fakeServer(t, func(be *pgproto3.Backend, c net.Conn) {
			if ready(be) {
				c.(*net.TCPConn).SetLinger(0) // close with RST
			}
		}), true},
		{"23505 answered to the statement", fakeServer(t, afterReady(func(be *pgproto3.Backend) {
			be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "23505", Message: "duplicate key value violates unique constraint"})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		})), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, tc.url)
			if err == nil {
				defer conn.Close(ctx)
				_, err = conn.Exec(ctx, "select 1")
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := unavailable(err); errors.Is(got, store.ErrUnavailable) != tc.want {
				t.Fatalf("unavailable(%v): ErrUnavailable %v, want %v", err, !tc.want, tc.want)
			}
			if got := lost(err); errors.Is(got, store.ErrUnavailable) != tc.want {
				t.Fatalf("lost(%v): ErrUnavailable %v, want %v", err, !tc.want, tc.want)
			}
		})
	}
}
