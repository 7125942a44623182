//go:build release

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianRoot is a Debian bookworm chroot with systemd (for systemd-analyze
// verify against Debian's own units), made once with debootstrap and kept
// in CLOUD2MQTT_CI_CACHE (default /tmp/cloud2mqtt-ci).
func debianRoot(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("CLOUD2MQTT_CI_CACHE")
	if cache == "" {
		cache = "/tmp/cloud2mqtt-ci"
	}
	root := filepath.Join(cache, "debian-bookworm")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/dpkg")); err == nil {
		return root
	}
	mirror := os.Getenv("DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	tmp := root + ".tmp"
	os.RemoveAll(tmp)
	t.Logf("debootstrap bookworm into %s (once; the chroot is cached)", root)
	cmd := exec.Command("debootstrap", "--variant=minbase", "--include=systemd", "bookworm", tmp, mirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debootstrap: %v\n%s", err, tail(out))
	}
	if err := os.Rename(tmp, root); err != nil {
		t.Fatal(err)
	}
	return root
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 3000 {
		s = "..." + s[len(s)-3000:]
	}
	return s
}

func inRoot(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("chroot", append([]string{root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"}
	out, err := cmd.CombinedOutput() // no stdin: a dpkg prompt fails the test
	if err != nil {
		t.Fatalf("chroot %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestDebInstallUpgradeRemovePurge: the amd64 package in a Debian chroot,
// as a user would go through it, with the unit checked by systemd itself.
func TestDebInstallUpgradeRemovePurge(t *testing.T) {
	root := debianRoot(t)
	// A run that failed half-way may have left the package behind.
	exec.Command("chroot", root, "dpkg", "--purge", "cloud2mqtt").Run()
	for _, p := range []string{"etc/cloud2mqtt", "etc/systemd/system/cloud2mqtt.service.d", "var/lib/private/cloud2mqtt",
		"var/lib/cloud2mqtt", "etc/systemd/system/multi-user.target.wants/cloud2mqtt.service"} {
		os.RemoveAll(filepath.Join(root, p))
	}

	// A second, later version to upgrade to, from the same binary.
	r, err := newRelease(repoDir, t.TempDir(), "0.0.1", testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	r.work = t.TempDir()
	bin := filepath.Join(r.work, "cloud2mqtt")
	_, files := readTarGz(t, filepath.Join(dist, "cloud2mqtt_"+testVersion+"_linux_amd64.tar.gz"))
	if err := os.WriteFile(bin, files["cloud2mqtt_"+testVersion+"_linux_amd64/cloud2mqtt"], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.deb(targets[0], bin, "0.0.1"); err != nil {
		t.Fatal(err)
	}
	stage := filepath.Join(root, "tmp")
	for src, dst := range map[string]string{
		filepath.Join(dist, "cloud2mqtt_"+testVersion+"_amd64.deb"): "v1.deb",
		filepath.Join(r.out, "cloud2mqtt_0.0.1_amd64.deb"):          "v2.deb",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stage, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	etc := filepath.Join(root, "etc/cloud2mqtt")
	env := filepath.Join(etc, "cloud2mqtt.env")
	before := snapshot(t, root)

	// Install: the binary runs, the unit verifies, nothing is enabled.
	inRoot(t, root, "dpkg", "-i", "/tmp/v1.deb")
	if v := inRoot(t, root, "dpkg-query", "-W", "-f", "${Version} ${Status}", "cloud2mqtt"); v != "0.0.0~test install ok installed" {
		t.Errorf("after install: %q", v)
	}
	if out := inRoot(t, root, "/usr/bin/cloud2mqtt", "-version"); out != "cloud2mqtt "+testVersion+"\n" {
		t.Errorf("-version in the chroot: %q", out)
	}
	if fi, err := os.Stat(env); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", env, fi, err)
	}
	if exists(t, filepath.Join(root, "etc/systemd/system/multi-user.target.wants/cloud2mqtt.service")) {
		t.Error("the package enabled the unit before the key is set")
	}
	verify := exec.Command("systemd-analyze", "verify", "--root="+root, "cloud2mqtt.service")
	if out, err := verify.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify of the installed unit: %v\n%s", err, out)
	}

	// The user configures it; an upgrade keeps the edits without asking.
	if err := os.WriteFile(env, []byte("CLOUD_BASE_URL=https://cloud.example\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// And everything README.Debian has the user make, and systemd makes
	// once the bridge has run (DynamicUser's state, the enablement link).
	for p, body := range map[string]string{
		"etc/cloud2mqtt/api_key":                                "k\n",
		"etc/cloud2mqtt/mqtt_password":                          "p\n",
		"etc/cloud2mqtt/http_token":                             "a-token-of-16-characters\n",
		"etc/systemd/system/cloud2mqtt.service.d/override.conf": "[Service]\nLoadCredential=http_token:/etc/cloud2mqtt/http_token\n",
		"var/lib/private/cloud2mqtt/devices.json":               "[]\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"var/lib/cloud2mqtt": "private/cloud2mqtt",
		"etc/systemd/system/multi-user.target.wants/cloud2mqtt.service": "/usr/lib/systemd/system/cloud2mqtt.service",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755)
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	inRoot(t, root, "dpkg", "-i", "/tmp/v2.deb")
	if v := inRoot(t, root, "dpkg-query", "-W", "-f", "${Version}", "cloud2mqtt"); v != "0.0.1" {
		t.Errorf("after the upgrade: version %q", v)
	}
	if b, _ := os.ReadFile(env); string(b) != "CLOUD_BASE_URL=https://cloud.example\n" {
		t.Errorf("the upgrade changed the user's cloud2mqtt.env: %q", b)
	}

	// Remove keeps the configuration; purge deletes it.
	inRoot(t, root, "dpkg", "-r", "cloud2mqtt")
	if exists(t, filepath.Join(root, "usr/bin/cloud2mqtt")) || exists(t, filepath.Join(root, "usr/lib/systemd/system/cloud2mqtt.service")) {
		t.Error("remove left the binary or the unit")
	}
	if !exists(t, env) || !exists(t, filepath.Join(etc, "api_key")) {
		t.Error("remove deleted the configuration")
	}
	inRoot(t, root, "dpkg", "-P", "cloud2mqtt")
	if exists(t, etc) {
		t.Error("purge left /etc/cloud2mqtt")
	}
	// Purge leaves the system as it was before the install.
	after := snapshot(t, root)
	for p := range after {
		if !before[p] {
			t.Errorf("purge left %s", p)
		}
	}
	for p := range before {
		if !after[p] {
			t.Errorf("purge removed %s, which was there before the install", p)
		}
	}
	if out, _ := exec.Command("chroot", root, "dpkg-query", "-W", "cloud2mqtt").CombinedOutput(); !strings.Contains(string(out), "no packages found") {
		t.Errorf("after purge dpkg still knows the package: %s", out)
	}
	os.Remove(filepath.Join(stage, "v1.deb"))
	os.Remove(filepath.Join(stage, "v2.deb"))
}

// snapshot lists the paths of a chroot, leaving out what dpkg, apt and the
// kernel keep for themselves (dpkg's database, logs, caches, /proc...).
func snapshot(t *testing.T, root string) map[string]bool {
	t.Helper()
	skip := map[string]bool{"proc": true, "sys": true, "dev": true, "tmp": true, "run": true,
		"var/lib/dpkg": true, "var/lib/apt": true, "var/cache": true, "var/log": true}
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip[filepath.ToSlash(rel)] {
			return filepath.SkipDir
		}
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
