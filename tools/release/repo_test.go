package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRepo copies the files the version check reads into a directory, with
// edits.
func fakeRepo(t *testing.T, edit func(path string, b []byte) []byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{appConfigPath, appChangelogPath, composePath, changelogPath} {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			b = edit(p, b)
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func repoVersion(t *testing.T) string {
	t.Helper()
	c, err := readAppConfig(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return c.Version
}

// The version of config.yaml, CHANGELOG.md and the tag agree in the
// repository; any mismatch is refused with a message naming both values.
func TestVersionsAgree(t *testing.T) {
	v := repoVersion(t)
	if err := checkVersions(fakeRepo(t, nil), v); err != nil {
		t.Fatalf("the repository's own version %s: %v", v, err)
	}
	if err := checkVersions(fakeRepo(t, nil), "v"+v); err != nil {
		t.Errorf("the tag v%s: %v", v, err)
	}
	err := checkVersions(fakeRepo(t, nil), "v9.9.9")
	for _, want := range []string{`9.9.9 (from "v9.9.9")`, `config.yaml's "` + v + `"`, `CHANGELOG.md's latest release "` + v + `"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a tag of another version: %v, want %q", err, want)
		}
	}
	bumped := fakeRepo(t, func(p string, b []byte) []byte {
		if p == appConfigPath {
			return bytes.Replace(b, []byte(`version: "`+v+`"`), []byte(`version: "9.9.9"`), 1)
		}
		return b
	})
	err = checkVersions(bumped, v)
	if err == nil || !strings.Contains(err.Error(), `config.yaml's "9.9.9"`) || !strings.Contains(err.Error(), "the version "+v) {
		t.Errorf("config.yaml ahead of the changelog: %v", err)
	}
	stale := fakeRepo(t, func(p string, b []byte) []byte {
		if p == appChangelogPath {
			return append(b, "- a line the release's entry lacks\n"...)
		}
		return b
	})
	if err := checkVersions(stale, v); err == nil || !strings.Contains(err.Error(), "TestAppChangelog -update") {
		t.Errorf("an app changelog that is not the release's entry: %v", err)
	}
}

// The command refuses before it builds anything.
func TestReleaseRefusesAnotherVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	t.Setenv("SOURCE_DATE_EPOCH", "1795600000")
	repo := fakeRepo(t, nil)
	if err := os.MkdirAll(filepath.Join(repo, "cmd", "bridge"), 0o755); err != nil {
		t.Fatal(err)
	}
	code := run([]string{"-repo", repo, "-out", t.TempDir(), "9.9.9"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `"9.9.9"`) || !strings.Contains(errOut.String(), repoVersion(t)) {
		t.Errorf("release 9.9.9: code %d, %q", code, errOut.String())
	}
	errOut.Reset()
	code = run([]string{"publish", "-repo", repo, "9.9.9"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), `"9.9.9"`) {
		t.Errorf("publish 9.9.9: code %d, %q", code, errOut.String())
	}
}

// The images' names come from the app's config.yaml and the compose file,
// under one registry and owner.
func TestImageNames(t *testing.T) {
	n, err := readImageNames(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(n.app) != filepath.Dir(n.container) || filepath.Base(n.container) != "cloud2mqtt" {
		t.Errorf("the app's image %s and the compose file's %s: want one registry and owner, and the name cloud2mqtt", n.app, n.container)
	}
	for in, want := range map[string]string{
		"ghcr.io/o/x:1": "ghcr.io/o/x:1", "127.0.0.1:5000/o/x:1": "127.0.0.1:5000/o/x:1", "localhost/x:1": "localhost/x:1",
		"x:1": "docker.io/library/x:1", "o/x:1": "docker.io/o/x:1",
	} {
		if got := qualified(in); got != want {
			t.Errorf("qualified(%s) = %s, want %s", in, got, want)
		}
	}
	if (imageNames{app: "r/o/{arch}-x", arch: []string{"aarch64", "amd64"}}).layoutApp() != "r/o/aarch64-x" {
		t.Error("layoutApp does not fill in {arch}")
	}
}
