package main

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The same entries in any order give the same bytes, with fixed headers.
func TestWriteTarIsDeterministic(t *testing.T) {
	at := time.Unix(1700000000, 0)
	a := []entry{{name: "d/", mode: 0o755}, {name: "d/b", mode: 0o644, data: []byte("b")}, {name: "d/a", mode: 0o600, uid: 7, gid: 8, data: []byte("a")}}
	b := []entry{a[2], a[0], a[1]}
	var x, y bytes.Buffer
	if err := writeTar(&x, a, at); err != nil {
		t.Fatal(err)
	}
	if err := writeTar(&y, b, at); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("the order of the entries changed the tar")
	}
	tr := tar.NewReader(&x)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(at) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || len(h.PAXRecords) > 0 {
			t.Errorf("%s: times %v %v %v, pax %v", h.Name, h.ModTime, h.AccessTime, h.ChangeTime, h.PAXRecords)
		}
		if h.Name == "d/a" && (h.Uid != 7 || h.Gid != 8 || h.Uname != "" || h.Mode != 0o600) {
			t.Errorf("d/a: %d:%d %q mode %o", h.Uid, h.Gid, h.Uname, h.Mode)
		}
	}
	if strings.Join(names, " ") != "d/ d/a d/b" {
		t.Errorf("order %v", names)
	}
	g1, _ := gzipBytes([]byte("same"))
	g2, _ := gzipBytes([]byte("same"))
	if !bytes.Equal(g1, g2) || g1[4]|g1[5]|g1[6]|g1[7] != 0 {
		t.Errorf("gzip output differs or carries a time: % x", g1[:10])
	}
}

// The package's unit is the repository's with the binary in /usr/bin.
func TestPackageUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "systemd", "cloud2mqtt.service"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := packageUnit(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("\nExecStart=/usr/bin/cloud2mqtt\n")) || bytes.Contains(got, []byte("/usr/local")) {
		t.Errorf("ExecStart not moved to /usr/bin:\n%s", got)
	}
	if bytes.Count(unit, []byte("\n")) != bytes.Count(got, []byte("\n")) {
		t.Error("lines added or lost")
	}
	if _, err := packageUnit(bytes.ReplaceAll(unit, []byte("ExecStart="), []byte("#ExecStart="))); err == nil {
		t.Error("a unit without the ExecStart line was accepted")
	}
}

func TestVersions(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "0.1.0", "0.2.0-rc1": "0.2.0~rc1", "0.0.0-check": "0.0.0~check", "1.0.0+git.1": "1.0.0+git.1"} {
		if got := debVersion(in); got != want {
			t.Errorf("debVersion(%q) = %q, want %q", in, got, want)
		}
	}
	repo := filepath.Join("..", "..")
	for _, bad := range []string{"", "latest", "1.0/2", "1.0 beta", "-1"} {
		if _, err := newRelease(repo, t.TempDir(), bad, "0"); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %q: %v", bad, err)
		}
	}
	r, err := newRelease(repo, t.TempDir(), "v1.2.3", "1700000000")
	if err != nil || r.version != "1.2.3" || r.epoch.Unix() != 1700000000 {
		t.Errorf("v1.2.3: %+v %v", r, err)
	}
	if _, err := newRelease(repo, t.TempDir(), "1.0.0", "yesterday"); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("bad epoch: %v", err)
	}
	if _, err := newRelease(t.TempDir(), t.TempDir(), "1.0.0", "0"); err == nil || !strings.Contains(err.Error(), "not the cloud2mqtt repository") {
		t.Errorf("wrong repo: %v", err)
	}
}

// The archive's config.example.env is root-only once installed, as the
// .deb's /etc/cloud2mqtt/cloud2mqtt.env is: it is 0600 in the archive, so
// tar -x and cp keep it so, and the API key may be written in it.
func TestArchiveModes(t *testing.T) {
	r := &release{repo: filepath.Join("..", "..")}
	entries, err := archiveEntries("c2m", []byte("binary"), r.readRepo)
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	if err := writeTar(&tarball, entries, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"c2m/": 0o755, "c2m/cloud2mqtt": 0o755, "c2m/config.example.env": 0o600,
		"c2m/cloud2mqtt.service": 0o644, "c2m/README.md": 0o644, "c2m/LICENSE": 0o644, "c2m/CHANGELOG.md": 0o644}
	tr := tar.NewReader(&tarball)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if m, ok := want[h.Name]; !ok || h.Mode != m {
			t.Errorf("%s: mode %04o, want %04o", h.Name, h.Mode, m)
		}
		delete(want, h.Name)
	}
	if len(want) > 0 {
		t.Errorf("the archive lacks %v", want)
	}
}
