package auth

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled at its first use rather
// than when the package is initialised: initialisers run at every start
// of the binary, whatever it then does, and the package's patterns only
// check admin input and sign-ins with providers.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
