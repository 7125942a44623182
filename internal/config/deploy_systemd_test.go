//go:build systemd

package config

// The unit's sandbox score, as systemd itself computes it: needs
// systemd-analyze, so it runs with -tags systemd (.ci/run sets it).

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// maxExposure is the highest systemd-analyze security score the unit may
// have (0 = locked down, 10 = unprotected).
const maxExposure = 2.0

func TestSystemdUnitExposure(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed (Debian: apt-get install systemd); the systemd tag needs it")
	}
	unit, err := filepath.Abs(filepath.Join(deployDir, "systemd", "cloud2mqtt.service"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for cloud2mqtt\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure in:\n%s", out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security: exposure %.1f", score)
	if score > maxExposure {
		t.Errorf("the unit's exposure is %.1f, above %.1f: restore its hardening\n%s", score, maxExposure, out)
	}
	// systemd ignores unknown keys and keys in the wrong section with a
	// warning only; the unit must have none.
	if bytes.Contains(out, []byte("Unknown key")) || bytes.Contains(out, []byte("ignoring")) {
		t.Errorf("systemd ignores part of the unit:\n%s", out)
	}
}
