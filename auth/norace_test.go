//go:build !race

package auth

// raceEnabled: see race_test.go.
const raceEnabled = false
