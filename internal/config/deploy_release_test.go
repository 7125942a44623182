package config

// Tests of the release's deploy files that need nothing but Go: the Home
// Assistant app (its options are settings, every option has a translation,
// its version is the changelog's), the Dockerfile against the image
// tools/release builds, and the Debian maintainer scripts. The artifacts
// themselves are checked by tools/release's tests (-tags release).

import (
	"bufio"
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var appDir = filepath.Join(deployDir, "homeassistant", "cloud2mqtt")

// yamlBlock returns the "key: value" lines indented under a top-level key
// of a simple YAML file (the app's files are flat by design).
func yamlBlock(t *testing.T, b []byte, key string) map[string]string {
	t.Helper()
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") {
			in = strings.TrimSpace(line) == key+":"
			continue
		}
		if in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			out[k] = strings.TrimSpace(v)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s: block", key)
	}
	return out
}

func topLevel(b []byte, key string) string {
	m := regexp.MustCompile(`(?m)^` + key + `: *"?([^"\n]*)"?$`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

func TestHomeAssistantApp(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(appDir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"slug": "cloud2mqtt", "init": "false", "image": "ghcr.io/cloud2mqtt/cloud2mqtt-ha-app"} {
		if got := topLevel(cfg, key); got != want {
			t.Errorf("config.yaml %s: %q, want %q", key, got, want)
		}
	}
	if !bytes.Contains(cfg, []byte("services:\n  - mqtt:need\n")) || !bytes.Contains(cfg, []byte("arch:\n  - amd64\n  - aarch64\n")) {
		t.Error("config.yaml lacks services [mqtt:need] or arch [amd64, aarch64]")
	}
	// The app's version is the latest release in the changelog.
	changelog, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	latest := regexp.MustCompile(`(?m)^## \[([0-9][^\]]*)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(changelog)
	if latest == nil || topLevel(cfg, "version") != string(latest[1]) {
		t.Errorf("config.yaml version %q, CHANGELOG.md's latest release %q", topLevel(cfg, "version"), latest)
	}

	// Every option is a setting in lower case (internal/addon turns it into
	// the variable), every default is in the schema, the secrets are
	// password fields, and every option has a name and description.
	vars := map[string]Var{}
	for _, v := range Vars() {
		vars[strings.ToLower(v.Name)] = v
	}
	schema := yamlBlock(t, cfg, "schema")
	for k, typ := range schema {
		v, ok := vars[k]
		if !ok {
			t.Errorf("option %s is not a setting (no %s in config.example.env)", k, strings.ToUpper(k))
			continue
		}
		if v.Secret != strings.HasPrefix(typ, "password") {
			t.Errorf("option %s has type %s: secrets must be password fields, others not", k, typ)
		}
	}
	for _, must := range []string{"cloud_api_key", "cloud_base_url", "poll_interval", "cloud_daily_limit", "log_level", "mqtt_url"} {
		if _, ok := schema[must]; !ok {
			t.Errorf("option %s missing from the schema", must)
		}
	}
	for k := range yamlBlock(t, cfg, "options") {
		if _, ok := schema[k]; !ok {
			t.Errorf("default for %s, which is not in the schema", k)
		}
	}
	poll := regexp.MustCompile(strings.TrimSuffix(strings.TrimPrefix(schema["poll_interval"], "match("), ")"))
	for s, ok := range map[string]bool{"60s": true, "1h30m": true, "2.5m": true, "500ms": true, "60": true, "1.5": true, "fast": false, "60x": false, "": false} {
		if poll.MatchString(s) != ok {
			t.Errorf("poll_interval %q: schema match %v, want %v", s, !ok, ok)
		}
	}
	tr, err := os.ReadFile(filepath.Join(appDir, "translations", "en.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(appDir, "DOCS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range schema {
		if !regexp.MustCompile(`(?m)^  ` + k + `:\n    name: .+\n    description: .+$`).Match(tr) {
			t.Errorf("translations/en.yaml: no name and description for %s", k)
		}
		if !bytes.Contains(docs, []byte("`"+k+"`")) {
			t.Errorf("DOCS.md does not describe %s", k)
		}
	}

	f, err := os.Open(filepath.Join(appDir, "icon.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	icon, err := png.DecodeConfig(f)
	if err != nil || icon.Width != 128 || icon.Height != 128 {
		t.Errorf("icon.png: %+v %v, want a 128x128 PNG", icon, err)
	}
	repo, err := os.ReadFile(filepath.Join(deployDir, "homeassistant", "repository.yaml"))
	if err != nil || topLevel(repo, "name") == "" {
		t.Errorf("repository.yaml has no name (%v)", err)
	}
}

// The Dockerfile builds the image tools/release builds: the same binary
// path, user, state directory and volume.
func TestDockerfileMatchesTheReleaseImage(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join(deployDir, "docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	oci, err := os.ReadFile(filepath.Join("..", "..", "tools", "release", "oci.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ release, docker string }{
		{`imageBin   = "usr/local/bin/cloud2mqtt"`, `ENTRYPOINT ["/usr/local/bin/cloud2mqtt"]`},
		{`imageUID   = 65532`, "USER 65532:65532"},
		{`imageState = "/var/lib/cloud2mqtt"`, "ENV STATE_DIR=/var/lib/cloud2mqtt"},
		{`imageState = "/var/lib/cloud2mqtt"`, "VOLUME /var/lib/cloud2mqtt"},
	} {
		if !bytes.Contains(oci, []byte(c.release)) || !bytes.Contains(dockerfile, []byte(c.docker)) {
			t.Errorf("tools/release/oci.go has %t for %s, the Dockerfile %t for %s",
				bytes.Contains(oci, []byte(c.release)), c.release, bytes.Contains(dockerfile, []byte(c.docker)), c.docker)
		}
	}
}

// The Debian package starts nothing before the key is set, and purge
// removes what the user added in /etc/cloud2mqtt.
func TestDebianMaintainerScripts(t *testing.T) {
	all := ""
	for _, s := range []string{"postinst", "prerm", "postrm"} {
		p := filepath.Join(deployDir, "debian", s)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		if !bytes.HasPrefix(b, []byte("#!/bin/sh\n")) || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: not an executable sh script", s)
		}
		all += string(b)
	}
	for _, bad := range []string{"systemctl enable", "systemctl start", "--now", "deb-systemd-invoke start"} {
		if strings.Contains(all, bad) {
			t.Errorf("a maintainer script runs %q", bad)
		}
	}
	for _, want := range []string{"try-restart cloud2mqtt.service", "rm -f /etc/cloud2mqtt/api_key", "rmdir /etc/cloud2mqtt"} {
		if !strings.Contains(all, want) {
			t.Errorf("the maintainer scripts lack %q", want)
		}
	}
}
