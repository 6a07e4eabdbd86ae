package postgres

import "errors"

// errNotImplemented answers the methods not yet written for PostgreSQL.
var errNotImplemented = errors.New("postgres: not implemented yet")

// Helpers other files call across domains; each domain's file replaces
// its stub.
