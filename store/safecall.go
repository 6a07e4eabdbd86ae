package store

import "fmt"

// Panicked is a Batch function's panic, as SafeCall returns it, so that
// a backend's committer can hand it to the function's caller.
type Panicked struct{ Value any }

// Error says what the function panicked with.
func (p Panicked) Error() string { return fmt.Sprintf("panic in batch function: %v", p.Value) }

// SafeCall runs fn, turning a panic into an error (Panicked) so that one
// bad call cannot take a backend's committer down.
func SafeCall(fn func(Tx) error, tx Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Panicked{p}
		}
	}()
	return fn(tx)
}
