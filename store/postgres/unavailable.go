package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// A failure of the connection, not of the statement, means the database
// cannot be reached right now: store.ErrUnavailable, which callers
// answer 503 with Retry-After. A PostgreSQL restart shows every kind of
// it in turn: sessions end with 57P01 (fast shutdown), connecting is
// refused while the server is down, then answered 57P03 while it starts.

// connectionClass reports whether SQLSTATE code is the server refusing
// or ending the connection rather than the statement:
//
//	08xxx  connection_exception (failure, rejection, protocol violation)
//	57P01  admin_shutdown (the server is shutting down)
//	57P02  crash_shutdown (another backend crashed; the server restarts)
//	57P03  cannot_connect_now (starting up, shutting down, in recovery)
//	57P05  idle_session_timeout (the server closed an idle connection)
//	53300  too_many_connections (no connection slot left)
func connectionClass(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "57P05", "53300":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// connectionLost reports whether err is the connection's failure: an
// SQLSTATE of connectionClass, a failed connection attempt whatever its
// cause (refused, reset, timed out, or answered by the server with an
// error), a network error, or the connection closing under a statement.
// An error PostgreSQL answered to the statement itself (a constraint, a
// serialization failure, a syntax error) is not.
func connectionLost(err error) bool {
	var (
		connect *pgconn.ConnectError
		pe      *pgconn.PgError
		ne      net.Error
	)
	switch {
	case errors.As(err, &connect):
		return true
	case errors.As(err, &pe):
		return connectionClass(pe.Code)
	}
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.SafeToRetry(err)
}

// unavailable wraps store.ErrUnavailable around err when it means the
// database could not be reached: any error but one PostgreSQL answered
// to the statement (connectionLost tells a connection's SQLSTATE from a
// statement's) and the caller's context ending. Statement paths pass
// every error through it.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !connectionLost(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// lost wraps store.ErrUnavailable around err when connectionLost says
// so and it is not wrapped yet, and leaves every other error as it is
// (a transaction function's own errors among them): the last word on a
// transaction's error, whatever path it took out of the function.
func lost(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !connectionLost(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
