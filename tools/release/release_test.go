//go:build release

package main

// Tests of the release artifacts themselves (go test -tags release, from
// .ci/run): the whole release is built once into a temporary directory and
// every file checked as a user would check it. They
// need dpkg-deb, debootstrap and systemd-analyze (.ci/run installs them) and
// a minute or two with a warm build cache.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	testVersion = "0.0.0-test"
	testEpoch   = "1795600000" // 2026-11-25T07:06:40Z
)

var (
	dist    string // the release built by TestMain
	epoch   = time.Unix(1795600000, 0).UTC()
	repoDir = filepath.Join("..", "..")
)

func TestMain(m *testing.M) {
	code := func() int {
		tmp, err := os.MkdirTemp("", "cloud2mqtt-release-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		dist = filepath.Join(tmp, "dist")
		start := time.Now()
		if err := buildRelease(dist, testVersion); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("release built in %.1fs\n", time.Since(start).Seconds())
		return m.Run()
	}()
	os.Exit(code)
}

func buildRelease(out, version string) error {
	r, err := newRelease(repoDir, out, version, testEpoch)
	if err != nil {
		return err
	}
	return r.build()
}

// artifacts are the files every release has, by name.
func artifacts(version string) []string {
	names := []string{"SHA256SUMS"}
	for _, t := range targets {
		names = append(names, fmt.Sprintf("cloud2mqtt_%s_linux_%s.tar.gz", version, t.name))
		if t.deb != "" {
			names = append(names, fmt.Sprintf("cloud2mqtt_%s_%s.deb", version, t.deb))
		}
	}
	names = append(names, "cloud2mqtt_"+version+"_oci.tar", "cloud2mqtt_"+version+"_ha-app.tar")
	sort.Strings(names)
	return names
}

func TestEveryArtifactAndTheirSums(t *testing.T) {
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := artifacts(testVersion)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dist holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
	cmd.Dir = dist
	if out, err := cmd.CombinedOutput(); err != nil || bytes.Count(out, []byte(": OK\n")) != len(want)-1 {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
}

// A second build of the same commit and version gives the same bytes.
func TestReproducible(t *testing.T) {
	again := t.TempDir()
	if err := buildRelease(again, testVersion); err != nil {
		t.Fatal(err)
	}
	for _, name := range artifacts(testVersion) {
		a, err1 := os.ReadFile(filepath.Join(dist, name))
		b, err2 := os.ReadFile(filepath.Join(again, name))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds (%v, %v)", name, err1, err2)
		}
	}
}

// readTarGz returns a tar.gz's headers and file contents by name.
func readTarGz(t *testing.T, path string) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("%s: gzip header carries a time %v or name %q", path, zr.ModTime, zr.Name)
	}
	return readTar(t, zr)
}

func readTar(t *testing.T, r io.Reader) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(r)
	var hs []*tar.Header
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs, files
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM}

// checkBinary: an ELF of t's machine, statically linked (no interpreter, no
// shared libraries), built for t's GOARM, with the version stamped.
func checkBinary(t *testing.T, tg target, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: not an ELF: %v", path, err)
	}
	defer f.Close()
	if f.Machine != elfMachine[tg.goarch] {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, elfMachine[tg.goarch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: dynamically linked (%v)", path, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s: needs %v", path, libs)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOARCH"] != tg.goarch ||
		(tg.goarm != "" && !strings.HasPrefix(settings["GOARM"], tg.goarm)) {
		t.Errorf("%s: build settings %v", path, settings)
	}
	// -trimpath keeps -ldflags out of the build info: look for the
	// stamped version itself (the amd64 binary also prints it).
	if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte(testVersion)) {
		t.Errorf("%s: the version %s is not stamped in", path, testVersion)
	}
}

func TestArchives(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			base := fmt.Sprintf("cloud2mqtt_%s_linux_%s", testVersion, tg.name)
			hs, files := readTarGz(t, filepath.Join(dist, base+".tar.gz"))
			var names []string
			for _, h := range hs {
				names = append(names, h.Name)
				if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || !h.AccessTime.IsZero() {
					t.Errorf("%s: mtime %v uid %d gid %d atime %v", h.Name, h.ModTime, h.Uid, h.Gid, h.AccessTime)
				}
			}
			want := []string{base + "/", base + "/CHANGELOG.md", base + "/LICENSE", base + "/README.md",
				base + "/cloud2mqtt", base + "/cloud2mqtt.service", base + "/config.example.env"}
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Errorf("entries %v, want %v", names, want)
			}
			for _, f := range []string{"LICENSE", "README.md", "config.example.env", "deploy/systemd/cloud2mqtt.service"} {
				repo, _ := os.ReadFile(filepath.Join(repoDir, f))
				if !bytes.Equal(files[base+"/"+filepath.Base(f)], repo) {
					t.Errorf("%s is not the repository's", f)
				}
			}
			// As a user unpacks it: the env file stays root-only (0600)
			// through tar -x and a cp to /etc/cloud2mqtt.
			dir := t.TempDir()
			if out, err := exec.Command("tar", "-xzf", filepath.Join(dist, base+".tar.gz"), "-C", dir).CombinedOutput(); err != nil {
				t.Fatalf("tar -x: %v\n%s", err, out)
			}
			envCopy := filepath.Join(dir, "cloud2mqtt.env")
			if out, err := exec.Command("cp", filepath.Join(dir, base, "config.example.env"), envCopy).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			for _, p := range []string{filepath.Join(dir, base, "config.example.env"), envCopy} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v %v, want mode 0600", p, fi, err)
				}
			}
			bin := filepath.Join(t.TempDir(), "cloud2mqtt")
			if err := os.WriteFile(bin, files[base+"/cloud2mqtt"], 0o755); err != nil {
				t.Fatal(err)
			}
			checkBinary(t, tg, bin)
			if tg.goarch == "amd64" {
				out, err := exec.Command(bin, "-version").CombinedOutput()
				if err != nil || string(out) != "cloud2mqtt "+testVersion+"\n" {
					t.Errorf("-version: %q %v", out, err)
				}
			}
		})
	}
}
