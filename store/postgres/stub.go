package postgres

import "errors"

// errNotImplemented answers the methods not yet written for PostgreSQL.
var errNotImplemented = errors.New("postgres: not implemented yet")
