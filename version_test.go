package main

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// TestVersionCommand: `latchkey version` and `latchkey --version` print
// the version, the commit and the Go version and exit 0.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "prints the version")
	want := regexp.MustCompile(`^latchkey (\S+) \(commit (\S+), (go\S+), ` + runtime.GOOS + `/` + runtime.GOARCH + `\)\n$`)
	for _, args := range []string{"version", "--version", "-version"} {
		code, out, errOut, _ := child(t, nil, args)
		if code != 0 || errOut != "" {
			t.Fatalf("latchkey %s: exit %d, stderr %q", args, code, errOut)
		}
		m := want.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("latchkey %s printed %q, want latchkey VERSION (commit COMMIT, GOVERSION, OS/ARCH)", args, out)
		}
		if m[1] != Version() || m[2] != Commit() || m[3] != runtime.Version() {
			t.Fatalf("latchkey %s printed %q, want version %s, commit %s and %s", args, out, Version(), Commit(), runtime.Version())
		}
	}
}

// TestVersion: -X main.version wins; else the module version stamped by
// the go command; else the VCS revision; else "dev". The commit: -X
// main.commit wins; else the VCS revision. printVersion prints both.
func TestVersion(t *testing.T) {
	testkit.EngineFree(t, "formats build information")
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"pseudo-version from a checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124104512-93d8a6812345+dirty"}}, "v0.0.0-20261124104512-93d8a6812345+dirty"},
		{"revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "93d8a68123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}}, "93d8a6812345"},
		{"dirty revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "93d8a68123456789"}}}, "93d8a6812345-dirty"},
		{"nothing", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := versionFrom(&c.bi); got != c.want {
				t.Fatalf("versionFrom=%q, want %q", got, c.want)
			}
		})
	}
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "93d8a68123456789abcdef"}}}, "93d8a6812345"},
		{"dirty revision", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "93d8a6"}, {Key: "vcs.modified", Value: "true"}}}, "93d8a6-dirty"},
		{"none", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, ""},
	} {
		if got := commitFrom(&c.bi); got != c.want {
			t.Errorf("commitFrom, %s: %q, want %q", c.name, got, c.want)
		}
	}
	oldV, oldC := version, commit
	version, commit = "v9.9.9-test", "0123456789ab"
	defer func() { version, commit = oldV, oldC }()
	if got := Version(); got != "v9.9.9-test" {
		t.Fatalf("Version with -X main.version set = %q", got)
	}
	if got := Commit(); got != "0123456789ab" {
		t.Fatalf("Commit with -X main.commit set = %q", got)
	}
	var b strings.Builder
	printVersion(&b)
	if want := "latchkey v9.9.9-test (commit 0123456789ab, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"; b.String() != want {
		t.Fatalf("printVersion=%q, want %q", b.String(), want)
	}
}

// TestWebhookAllowPrivateForms: the boolean flag works bare, as
// --flag=VALUE and as --flag VALUE, with true/false, yes/no, on/off,
// 1/0; from the environment too; anything else is refused.
func TestWebhookAllowPrivateForms(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses flags")
	for _, c := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", false},
		{[]string{"--webhook-allow-private"}, "", true},
		{[]string{"-webhook-allow-private"}, "", true},
		{[]string{"--webhook-allow-private", "yes"}, "", true},
		{[]string{"--webhook-allow-private", "Yes", "--addr", "127.0.0.1:1"}, "", true},
		{[]string{"--webhook-allow-private", "no"}, "", false},
		{[]string{"--webhook-allow-private", "true"}, "", true},
		{[]string{"--webhook-allow-private", "0"}, "", false},
		{[]string{"--webhook-allow-private=true"}, "", true},
		{[]string{"--webhook-allow-private=yes"}, "", true},
		{[]string{"--webhook-allow-private=off"}, "yes", false},
		{[]string{"--webhook-allow-private", "--addr", "127.0.0.1:1"}, "", true},
		{nil, "yes", true},
		{nil, "on", true},
		{nil, "1", true},
		{nil, "false", false},
	} {
		m := NewMain()
		err := m.ParseFlags(c.args, func(k string) string {
			if k == "LATCHKEY_WEBHOOK_ALLOW_PRIVATE" {
				return c.env
			}
			return ""
		})
		if err != nil {
			t.Errorf("%v (env %q): %v", c.args, c.env, err)
			continue
		}
		if m.Config.WebhookAllowPrivate != c.want {
			t.Errorf("%v (env %q): WebhookAllowPrivate=%v, want %v", c.args, c.env, m.Config.WebhookAllowPrivate, c.want)
		}
	}
	for _, bad := range [][]string{{"--webhook-allow-private=sometimes"}, {"--webhook-allow-private", "sometimes"}} {
		if err := NewMain().ParseFlags(bad, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
