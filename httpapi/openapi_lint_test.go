package httpapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// Redocly CLI's linter on openapi.json, with the repository's
// redocly.yaml (the recommended rules, each an error) and
// .redocly.lint-ignore.yaml (the operations a rule does not fit). .ci/run
// pins its version and installs it with npm, outside the repository,
// when missing.

// envRedocly names the linter's executable; envRequireLint, set to 1 (as
// .ci/run does), makes a missing linter fail the test instead of
// skipping it.
const (
	envRedocly     = "LATCHKEY_REDOCLY"
	envRequireLint = "LATCHKEY_REQUIRE_OPENAPI_LINT"
)

// pinnedRedocly returns the linter version .ci/run pins.
func pinnedRedocly(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^REDOCLY_VERSION=([0-9][0-9.]*)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal(".ci/run pins no REDOCLY_VERSION")
	}
	return string(m[1])
}

// findRedocly returns the linter's executable: $LATCHKEY_REDOCLY, else
// .ci/run's install of version in the user's cache, else redocly on
// PATH; "" when none is found.
func findRedocly(version string) string {
	if p := os.Getenv(envRedocly); p != "" {
		return p
	}
	if cache, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(cache, "latchkey", "redocly-cli-"+version, "node_modules", ".bin", "redocly")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("redocly")
	return p
}

// TestOpenAPILint runs the linter on openapi.json: any error or warning
// fails, each listed with its rule and place. It does not use the store:
// it runs on the first (bolt) pass only.
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "lints a file")
	version := pinnedRedocly(t)
	missing := func(msg string) {
		t.Helper()
		msg = "OPENAPI LINT NOT RUN: " + msg + "; .ci/run installs it (npm install --prefix ~/.cache/latchkey/redocly-cli-" + version + " @redocly/cli@" + version + ")"
		if os.Getenv(envRequireLint) == "1" {
			t.Fatal(msg + " (required: " + envRequireLint + "=1)")
		}
		t.Skip("!!!!! " + msg + " !!!!!")
	}
	bin := findRedocly(version)
	if bin == "" {
		missing("Redocly CLI not found ($" + envRedocly + ", the cache, or redocly on PATH)")
	}
	env := append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	cmd := exec.Command(bin, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		missing(bin + " --version: " + err.Error())
	}
	if got := strings.TrimSpace(string(out)); got != version {
		missing(bin + " is Redocly CLI " + got + ", not the " + version + " that .ci/run pins")
	}

	// From the repository's root, where redocly.yaml and the ignore file
	// are.
	cmd = exec.Command(bin, "lint", "httpapi/openapi.json", "--format=json")
	cmd.Dir, cmd.Env = "..", env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint: %v (%v)\nstdout: %s\nstderr: %s", err, runErr, out, stderr.Bytes())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors+report.Totals.Warnings > 0 || runErr != nil {
		t.Fatalf("redocly lint: %d errors, %d warnings (%v)", report.Totals.Errors, report.Totals.Warnings, runErr)
	}
	t.Logf("Redocly CLI %s: no problem (%d ignored by .redocly.lint-ignore.yaml)", version, report.Totals.Ignored)
}
