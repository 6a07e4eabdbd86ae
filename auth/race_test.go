//go:build race

package auth

// raceEnabled reports that the tests run under the race detector, whose
// bookkeeping of every atomic variable makes a test of memory bounds
// slow and its heap figures meaningless.
const raceEnabled = true
