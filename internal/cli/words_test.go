package cli

import (
	"errors"
	"flag"
	"io"
	"testing"
)

// TestFlagError: every parse error of package flag comes out naming the
// flag with two dashes; other errors pass unchanged.
func TestFlagError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "unknown flag --nope"},
		{[]string{"--nope=1"}, "unknown flag --nope"},
		{[]string{"--server"}, "--server needs a value"},
		{[]string{"--limit", "x"}, `invalid value "x" for --limit: parse error`},
		{[]string{"--limit=99999999999999999999"}, `invalid value "99999999999999999999" for --limit: value out of range`},
		{[]string{"--json=maybe"}, `invalid value "maybe" for --json: parse error`},
		{[]string{"---json"}, "bad flag syntax: ---json"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("server", "", "")
		fs.Int("limit", 0, "")
		fs.Bool("json", false, "")
		err := fs.Parse(tc.args)
		if got := FlagError(err); got == nil || got.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, got, tc.want)
		}
	}
	if FlagError(nil) != nil || FlagError(flag.ErrHelp) != flag.ErrHelp {
		t.Error("nil or flag.ErrHelp changed")
	}
	other := errors.New("--out is required")
	if FlagError(other) != other {
		t.Error("an error of ours changed")
	}
}

// TestCount: singular for one, plural otherwise.
func TestCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 lines were"}, {1, "1 line was"}, {2, "2 lines were"}, {1005, "1005 lines were"}} {
		if got := count(tc.n, "line") + " " + wasWere(tc.n); got != tc.want {
			t.Errorf("%d: %q, want %q", tc.n, got, tc.want)
		}
	}
}
