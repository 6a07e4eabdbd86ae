package auth

import "github.com/google/uuid"

// newID returns a time-ordered UUID (version 7) for rows that are
// written often: new rows land next to each other in the B+tree, so a
// group commit dirties few pages. The random part keeps ids unguessable
// enough for ids (they are never credentials).
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
