package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// Debian package metadata.
const (
	debMaintainer  = "cloud2mqtt authors <cloud2mqtt@users.noreply.invalid>"
	debDescription = `bridge a smart-home vendor's cloud API to MQTT and Home Assistant
cloud2mqtt reads the devices of a smart-home vendor's cloud account and
mirrors them to an MQTT broker: their states, commands back to the cloud
within its rate limits, and Home Assistant MQTT discovery so every device
appears in Home Assistant without YAML.`
)

// packageUnit is the repository's unit with the package's layout: the
// binary in /usr/bin. Everything else (the env file and the API key under
// /etc/cloud2mqtt, the state directory) is where the unit already looks.
func packageUnit(unit []byte) ([]byte, error) {
	const from, to = "\nExecStart=/usr/local/bin/cloud2mqtt\n", "\nExecStart=/usr/bin/cloud2mqtt\n"
	if bytes.Count(unit, []byte(from)) != 1 {
		return nil, fmt.Errorf("deploy/systemd/cloud2mqtt.service: want exactly one line %q to point at /usr/bin", strings.TrimSpace(from))
	}
	unit = bytes.Replace(unit, []byte(from), []byte(to), 1)
	const intro = "# Install steps: deploy/systemd/README.md."
	if !bytes.Contains(unit, []byte(intro)) {
		return nil, fmt.Errorf("deploy/systemd/cloud2mqtt.service: the line %q is gone; update packageUnit", intro)
	}
	return bytes.Replace(unit, []byte(intro), []byte("# Installed by the cloud2mqtt package; set-up: /usr/share/doc/cloud2mqtt/README.Debian."), 1), nil
}

// debVersion is VERSION as a Debian version: a pre-release suffix
// (0.2.0-rc1) becomes 0.2.0~rc1, which sorts before 0.2.0 as it should
// (with a hyphen, dpkg would read rc1 as a Debian revision and sort it
// after the release). A plain version is unchanged.
func debVersion(v string) string {
	return strings.Replace(v, "-", "~", 1)
}

// deb writes cloud2mqtt_VERSION_ARCH.deb for t, with version as the
// package's version (tests build a second version to upgrade to).
func (r *release) deb(t target, bin, version string) error {
	unit, err := r.readRepo("deploy/systemd/cloud2mqtt.service")
	if err != nil {
		return err
	}
	unit, err = packageUnit(unit)
	if err != nil {
		return err
	}
	unitFile := filepath.Join(r.work, "deb", "cloud2mqtt.service")
	if err := os.MkdirAll(filepath.Dir(unitFile), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(unitFile, unit, 0o644); err != nil {
		return err
	}
	repo := func(p string) string { return filepath.Join(r.repo, filepath.FromSlash(p)) }
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: r.epoch}}
	}
	conf := file(repo("config.example.env"), "/etc/cloud2mqtt/cloud2mqtt.env", 0o600)
	conf.Type = files.TypeConfigNoReplace
	dir := &files.Content{Destination: "/etc/cloud2mqtt", Type: files.TypeDir,
		FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: 0o755, MTime: r.epoch}}
	info := &nfpm.Info{
		Name:          "cloud2mqtt",
		Arch:          t.deb,
		Platform:      "linux",
		Version:       debVersion(version),
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    debMaintainer,
		Description:   debDescription,
		License:       "MIT",
		MTime:         r.epoch,
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				file(bin, "/usr/bin/cloud2mqtt", 0o755),
				file(unitFile, "/usr/lib/systemd/system/cloud2mqtt.service", 0o644),
				dir,
				conf,
				file(repo("README.md"), "/usr/share/doc/cloud2mqtt/README.md", 0o644),
				file(repo("deploy/debian/README.Debian"), "/usr/share/doc/cloud2mqtt/README.Debian", 0o644),
				file(repo("CHANGELOG.md"), "/usr/share/doc/cloud2mqtt/CHANGELOG.md", 0o644),
				file(repo("LICENSE"), "/usr/share/doc/cloud2mqtt/copyright", 0o644),
			},
			Scripts: nfpm.Scripts{
				PostInstall: repo("deploy/debian/postinst"),
				PreRemove:   repo("deploy/debian/prerm"),
				PostRemove:  repo("deploy/debian/postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return fmt.Errorf("deb %s: %w", t.deb, err)
	}
	var buf bytes.Buffer
	if err := deb.Default.Package(info, &buf); err != nil {
		return fmt.Errorf("deb %s: %w", t.deb, err)
	}
	return r.writeOut(fmt.Sprintf("cloud2mqtt_%s_%s.deb", version, t.deb), buf.Bytes())
}
