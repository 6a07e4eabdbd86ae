package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// TestReleaseTargets: .ci/release builds for linux amd64, arm64 and
// armv7, darwin arm64 and amd64, windows amd64; without a version it
// prints its usage and exits 2.
func TestReleaseTargets(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the release script")
	out, err := exec.Command("bash", ".ci/release", "--list").Output()
	if err != nil {
		t.Fatalf(".ci/release --list: %v", err)
	}
	want := []string{"linux/amd64", "linux/arm64", "linux/arm/7", "darwin/arm64", "darwin/amd64", "windows/amd64"}
	if got := strings.Fields(string(out)); !slices.Equal(got, want) {
		t.Fatalf(".ci/release --list = %v, want %v", got, want)
	}
	cmd := exec.Command("bash", ".ci/release")
	b, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "usage: .ci/release VERSION") {
		t.Fatalf(".ci/release without a version: %v, %s", err, b)
	}
}

// releaseMaxBytes is the most a stripped release binary may weigh.
const releaseMaxBytes = 25_000_000

// TestReleaseArm64UnderQemu: .ci/release cross-builds linux/arm64 with
// the version and commit stamped in; SHA256SUMS names it with its
// SHA-256 and `sha256sum -c` accepts it; the binary weighs at most 25 MB;
// run under qemu-user, its `latchkey version` prints the version, the
// commit and linux/arm64. Skipped without qemu-aarch64 (.ci/run installs
// Debian's qemu-user and sets LATCHKEY_REQUIRE_QEMU=1, which makes its
// absence a failure).
func TestReleaseArm64UnderQemu(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "cross-builds the binary and runs it under qemu")
	if testing.Short() {
		t.Skip("cross-builds the binary")
	}
	qemu := ""
	for _, name := range []string{"qemu-aarch64", "qemu-aarch64-static"} {
		if p, err := exec.LookPath(name); err == nil {
			qemu = p
			break
		}
	}
	if qemu == "" {
		if os.Getenv("LATCHKEY_REQUIRE_QEMU") != "" {
			t.Fatal("qemu-aarch64 not found and LATCHKEY_REQUIRE_QEMU is set (apt-get install qemu-user)")
		}
		t.Skip("qemu-aarch64 not found (apt-get install qemu-user)")
	}
	dir := t.TempDir()
	const v = "v0.0.0-releasetest"
	cmd := exec.Command("bash", ".ci/release", v, dir)
	cmd.Env = append(os.Environ(), "LATCHKEY_RELEASE_TARGETS=linux/arm64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf(".ci/release: %v\n%s", err, b)
	}
	name := "latchkey-" + v + "-linux-arm64"
	bin, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) > releaseMaxBytes {
		t.Errorf("%s weighs %d bytes, more than %d", name, len(bin), releaseMaxBytes)
	}
	sum := sha256.Sum256(bin)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Fatalf("SHA256SUMS = %q, want %q", sums, want)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dir
	if b, err := check.CombinedOutput(); err != nil || !strings.Contains(string(b), name+": OK") {
		t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, b)
	}
	out, err := exec.Command(qemu, filepath.Join(dir, name), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-aarch64 %s version: %v\n%s", name, err, out)
	}
	re := regexp.MustCompile(`^latchkey ` + regexp.QuoteMeta(v) + ` \(commit ([0-9a-f]{12}(?:-dirty)?|unknown), go\S+, linux/arm64\)\n$`)
	if !re.Match(out) {
		t.Fatalf("latchkey version under qemu printed %q, want the version, the commit and linux/arm64", out)
	}
	if head, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		if c := re.FindSubmatch(out)[1]; !strings.HasPrefix(string(c), strings.TrimSpace(string(head))) {
			t.Fatalf("commit %s, want %s", c, head)
		}
	}
}
