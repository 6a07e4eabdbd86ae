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
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// printVersion writes "latchkey <version> (<go version>, <os>/<arch>)".
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "latchkey %s (%s, %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
