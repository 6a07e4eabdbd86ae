package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release this binary was built as, set at build time:
//
//	go build -ldflags "-X main.version=v1.4.0" .
//
// Empty: Version falls back to the build information.
var version string

// commit is the commit this binary was built from, set at build time
// (-X main.commit=...) where the build has no VCS information, as in the
// container image and .ci/release (-trimpath builds keep it, but a tree
// without .git has none). Empty: Commit reads the build information.
var commit string

// Version returns the version of this binary: the -X main.version value;
// else the module version Go stamped into the build (a tagged release,
// or a pseudo-version naming the commit when built from a checkout);
// else the VCS revision (12 characters, "-dirty" when the tree had
// changes); else "dev".
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionFrom(bi)
}

// versionFrom picks the version out of build information (Version's
// fallbacks after -X).
func versionFrom(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	if rev := commitFrom(bi); rev != "" {
		return rev
	}
	return "dev"
}

// Commit returns the commit this binary was built from: the -X
// main.commit value, else the VCS revision Go stamped into the build (12
// characters, "-dirty" when the tree had changes), else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if c := commitFrom(bi); c != "" {
			return c
		}
	}
	return "unknown"
}

// commitFrom is the VCS revision of the build information, shortened,
// "-dirty" when the tree had changes; empty when there is none.
func commitFrom(bi *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// printVersion writes "latchkey <version> (commit <commit>, <go version>,
// <os>/<arch>)".
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "latchkey %s (commit %s, %s, %s/%s)\n", Version(), Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
