package cli

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
)

// count writes n and noun, in the plural (noun+"s") unless n is 1:
// "1 line", "2 lines".
func count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// wasWere is the verb for n things: "was" for one, else "were".
func wasWere[N int | int64](n N) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// flagMessages rewrite package flag's parse errors, which name a flag
// with one dash ("flag provided but not defined: -nope"), with the two
// dashes every help text and document uses. They are compiled at the
// first parse error, not at every start of the binary.
var flagMessages = sync.OnceValue(func() []flagMessage {
	return []flagMessage{
		{regexp.MustCompile(`^flag provided but not defined: -+(.*)$`), "unknown flag --$1"},
		{regexp.MustCompile(`^flag needs an argument: -+(.*)$`), "--$1 needs a value"},
		{regexp.MustCompile(`(?s)^invalid value (".*") for flag -+([A-Za-z0-9_-]+): (.*)$`), "invalid value $1 for --$2: $3"},
		{regexp.MustCompile(`(?s)^invalid boolean value (".*") for -+([A-Za-z0-9_-]+): (.*)$`), "invalid value $1 for --$2: $3"},
		{regexp.MustCompile(`(?s)^invalid boolean flag -*([A-Za-z0-9_-]+): (.*)$`), "invalid value for --$1: $2"},
	}
})

// flagMessage rewrites the parse errors that re matches with with.
type flagMessage struct {
	re   *regexp.Regexp
	with string
}

// FlagError returns a flag.FlagSet's parse error worded with two dashes
// ("unknown flag --nope", "--server needs a value", `invalid value "x"
// for --limit: ...`); any other error, flag.ErrHelp included, is
// returned as it is. The subcommands of main use it too, so that no
// message of the command line names a flag with one dash.
func FlagError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, m := range flagMessages() {
		if m.re.MatchString(msg) {
			return errors.New(m.re.ReplaceAllString(msg, m.with))
		}
	}
	return err
}
