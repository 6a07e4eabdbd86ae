// Package cli implements latchkey's operator subcommands
// (docs/operations.md, CLI): `latchkey
// project|key|method|provider|client|webhook|user|template|events|backup`
// call the admin API of a running server and print a table, or the
// response body with --json.
//
// The package is a plain HTTP client of the admin API: it decodes the wire
// shapes itself and imports nothing of the server.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Exit codes returned by Run.
const (
	exitOK    = 0 // the command succeeded
	exitError = 1 // the API refused, the server was unreachable, or a local I/O error
	exitUsage = 2 // unknown command or flag, missing argument or required flag
)

// Defaults for the common flags.
const (
	defaultServer = "http://127.0.0.1:8080"
	defaultData   = "./latchkey.db"
	// requestTimeout bounds one admin API call with the default client.
	requestTimeout = 30 * time.Second
)

// Env is what the CLI takes from its process.
type Env struct {
	// Getenv reads LATCHKEY_SERVER, LATCHKEY_ADMIN_TOKEN and
	// LATCHKEY_DATA; nil reads nothing.
	Getenv func(string) string
	// HTTPClient sends the admin API requests; nil is a client with a
	// 30 s timeout (backup then bounds stalls, not the whole download).
	HTTPClient *http.Client
}

// command is one subcommand, named by the words that follow `latchkey`.
type command struct {
	name    string   // "key revoke"
	args    []string // positional arguments, in order: {"PREFIX"}
	summary string   // one line for the overview
	help    string   // what `<command> --help` says under the synopsis
	// flags declares the command's own flags on fs and returns the action
	// to run once they are parsed.
	flags func(fs *flag.FlagSet) action
}

// action runs a parsed command.
type action func(ctx context.Context, c *call) error

// usageError is a command line the command cannot run: exit 2 with the
// command's help on stderr.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// commands returns every subcommand in the order Usage lists them. It is
// a function, not a variable, so that a server, which never lists them,
// does not build the list at start.
func commands() []*command {
	return []*command{
		projectCreate, projectList, projectUpdate, projectDelete,
		keyCreate, keyList, keyRevoke,
		methodCreate, methodList, methodStatus("disable", "inactive"), methodStatus("enable", "active"),
		providerAdd, providerList, providerSet, providerRemove,
		clientCreate, clientList, clientGet, clientUpdate, clientDelete, clientRotateSecret,
		webhookList,
		userList, userUpdate, userDelete,
		userState("disable", "Disabled user %s; their sessions are revoked.\n"), userState("enable", "Enabled user %s.\n"),
		userResetTOTP, userResetSMS, userSessions, userRevokeSessions,
		userConsents, userRevokeConsent,
		userExport, userImport,
		templateList, templatePut, templateDelete, templatePreview,
		events,
		backup,
	}
}

// Usage prints every command (serve and version, which main runs, then
// the admin subcommands) and the common flags. main prints it under its
// own title; an unknown command prints it too.
func Usage(w io.Writer) {
	fmt.Fprintf(w, "  %-28s%s\n", "latchkey serve [flags]", "run the server (latchkey serve --help lists its flags)")
	fmt.Fprintf(w, "  %-28s%s\n", "latchkey version", "print the version and the Go version (also --version)")
	fmt.Fprintf(w, "  %-26s  %s\n", "latchkey compact --data FILE --out FILE", "write a compacted copy of a stopped server's data file")
	fmt.Fprintf(w, "  %-26s  %s\n", "latchkey migrate --database-url URL", "bring a PostgreSQL database's schema up to date")
	fmt.Fprintf(w, "  %-26s  %s\n", "latchkey copy --from FILE_OR_URL --to FILE_OR_URL", "copy every record into an empty data file or database")
	fmt.Fprintf(w, "  %-26s  %s\n", "latchkey restore --from s3://... --data NEW_FILE", "fetch an off-site backup into a new data file (--list lists them)")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-26s  %s\n", c.short(), c.summary) // two spaces at least
	}
	fmt.Fprint(w, `
Common flags (they follow the subcommand):
  --server URL           admin API of the running server (env LATCHKEY_SERVER; else the address
                         the server wrote to <data>.addr; else `+defaultServer+`)
  --admin-token TOKEN    admin token (env LATCHKEY_ADMIN_TOKEN; else read from <data>.admin-token)
  --data FILE            data file whose .admin-token file holds the token (env LATCHKEY_DATA; default `+defaultData+`)
  --json                 print the API's JSON response instead of a table

Run "latchkey <command> --help" for a command's flags.
`)
}

// Run runs the subcommand named by args (os.Args[1:] without "serve") and
// returns the process exit code: 0 done, 1 API, network or I/O error,
// 2 usage error. It writes results to stdout and diagnostics to stderr,
// and never writes the admin token to either.
func Run(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage:")
		Usage(stderr)
		return exitUsage
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		return unknown(args, stdout, stderr)
	}

	fs := flag.NewFlagSet("latchkey "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cf commonFlags
	cf.register(fs, env.Getenv)
	act := cmd.flags(fs)
	pos, err := parseArgs(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		cmd.printHelp(stdout, fs)
		return exitOK
	}
	if err == nil && len(pos) != len(cmd.args) {
		err = cmd.argCountError(pos)
	}
	if err != nil {
		fmt.Fprintf(stderr, "latchkey %s: %v\n\n", cmd.name, err)
		cmd.printHelp(stderr, fs)
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	api, err := cf.client(env, set["server"])
	if err != nil {
		fmt.Fprintf(stderr, "latchkey %s: %v\n\n", cmd.name, err)
		cmd.printHelp(stderr, fs)
		return exitUsage
	}
	c := &call{api: api, out: stdout, json: cf.json, data: cf.data, args: pos, set: set}

	err = act(ctx, c)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "latchkey %s: %v\n\n", cmd.name, err)
		cmd.printHelp(stderr, fs)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "latchkey: %s\n", api.redact(err.Error()))
		return exitError
	}
}

// lookup finds the command named by the first one or two words of args
// and returns it with the arguments that follow its name.
func lookup(args []string) (*command, []string) {
	if len(args) >= 2 {
		if c := find(args[0] + " " + args[1]); c != nil {
			return c, args[2:]
		}
	}
	if c := find(args[0]); c != nil {
		return c, args[1:]
	}
	return nil, nil
}

func find(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// unknown answers args that name no command: a group alone or with
// --help lists the group; anything else is a usage error.
func unknown(args []string, stdout, stderr io.Writer) int {
	group := groupCommands(args[0])
	if group == nil {
		fmt.Fprintf(stderr, "latchkey: unknown command %q\n\nUsage:\n", args[0])
		Usage(stderr)
		return exitUsage
	}
	if len(args) >= 2 && isHelp(args[1]) {
		printGroup(stdout, args[0], group)
		return exitOK
	}
	if len(args) == 1 {
		fmt.Fprintf(stderr, "latchkey %s: missing subcommand\n\n", args[0])
	} else {
		fmt.Fprintf(stderr, "latchkey %s: unknown subcommand %q\n\n", args[0], args[1])
	}
	printGroup(stderr, args[0], group)
	return exitUsage
}

func isHelp(a string) bool {
	switch a {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// groupCommands returns the commands whose first word is group ("key"),
// nil when group is not a command group.
func groupCommands(group string) []*command {
	var out []*command
	for _, c := range commands() {
		if first, _, ok := strings.Cut(c.name, " "); ok && first == group {
			out = append(out, c)
		}
	}
	return out
}

func printGroup(w io.Writer, group string, cmds []*command) {
	fmt.Fprintf(w, "Usage: latchkey %s <subcommand> [flags]\n\n", group)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-26s  %s\n", c.short(), c.summary) // two spaces at least
	}
	fmt.Fprintf(w, "\nRun \"latchkey %s <subcommand> --help\" for its flags.\n", group)
}

// short is the command with its arguments: "latchkey key revoke PREFIX".
func (c *command) short() string {
	return strings.Join(append([]string{"latchkey", c.name}, c.args...), " ")
}

// synopsis is the command's usage line: "latchkey key revoke PREFIX [flags]".
func (c *command) synopsis() string { return c.short() + " [flags]" }

func (c *command) argCountError(pos []string) error {
	switch {
	case len(c.args) == 0:
		return fmt.Errorf("unexpected argument %q", pos[0])
	case len(pos) < len(c.args):
		return fmt.Errorf("missing %s", strings.Join(c.args[len(pos):], " "))
	default:
		return fmt.Errorf("unexpected argument %q", pos[len(c.args)])
	}
}

// printHelp prints the synopsis, the description, the command's own
// flags and the common flags, each with a double dash.
func (c *command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.synopsis(), c.help)
	var own, common []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if isCommonFlag(f.Name) {
			common = append(common, f)
		} else {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, own)
	}
	fmt.Fprintln(w, "\nCommon flags:")
	printFlags(w, common)
}

func printFlags(w io.Writer, flags []*flag.Flag) {
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range flags {
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "[]" {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, usage)
	}
	tw.Flush()
}

// parseArgs parses args with fs, letting flags and positional arguments
// interleave (`key revoke PREFIX --json`); everything after "--" is
// positional. It returns the positional arguments in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		// A non-boolean flag takes the next argument as its value, even
		// one that starts with a dash ("--out -").
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, FlagError(err)
	}
	return append(fs.Args(), pos...), nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// listFlag is a repeatable string flag; each value may also hold several
// items separated by commas. Empty items are dropped, so `--origin ""`
// sets an empty list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	if *l == nil {
		*l = []string{}
	}
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}
