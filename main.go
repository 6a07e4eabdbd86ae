// Command latchkey is a self-hosted authentication service in one binary:
// `latchkey serve` runs it; the other subcommands administer a running
// server through its admin API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"latchkey/internal/cli"
	_ "latchkey/store/bolt"     // registers the "bolt" driver (--data, a data file)
	_ "latchkey/store/postgres" // registers the "postgres" driver (--database-url)
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(os.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "version", "--version", "-version":
		printVersion(os.Stdout)
		return 0
	case "compact":
		return runCompact(args[1:], os.Stdout, os.Stderr)
	case "migrate", "copy", "restore":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		switch args[0] {
		case "migrate":
			return runMigrate(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
		case "restore":
			return runRestore(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
		}
		return runCopy(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	if args[0] != "serve" {
		env := cli.Env{Getenv: os.Getenv}
		return cli.Run(context.Background(), args, env, os.Stdout, os.Stderr)
	}
	m := NewMain()
	if err := m.ParseFlags(args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "latchkey serve: %v\n(latchkey serve --help lists the flags)\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "latchkey:", oneLine(err))
		m.Close()
		return 1
	}
	<-ctx.Done()
	m.Logger.Info("shutting down")
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "latchkey:", oneLine(err))
		return 1
	}
	return 0
}

// oneLine is err's text on one line: a driver's error of several lines
// (pgx lists each address it tried on a line of its own) has them joined
// by "; ", so that a failure stays one line of the log.
func oneLine(err error) string {
	var b strings.Builder
	for l := range strings.Lines(err.Error()) {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

func usage(w io.Writer) {
	fmt.Fprint(w, "latchkey: self-hosted authentication in one binary\n\nUsage:\n")
	cli.Usage(w)
}
