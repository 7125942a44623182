package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// What the release reads of the repository besides the sources: the Home
// Assistant app's config.yaml (the image name and version the Supervisor
// pulls), the compose file (the container image's name) and the changelogs.
const (
	appConfigPath    = "deploy/homeassistant/cloud2mqtt/config.yaml"
	appChangelogPath = "deploy/homeassistant/cloud2mqtt/CHANGELOG.md"
	composePath      = "deploy/docker/docker-compose.yml"
	changelogPath    = "CHANGELOG.md"
)

// appConfig is what the release uses of the app's config.yaml.
type appConfig struct {
	Version string   `yaml:"version"`
	Image   string   `yaml:"image"`
	Arch    []string `yaml:"arch"`
	URL     string   `yaml:"url"` // the project's repository
}

// hassPlatforms are the platforms the Supervisor pulls for each of its
// architectures (its docker/interface.py MAP_ARCH: amd64 and aarch64 today;
// the three it deprecated as older Supervisors had them).
var hassPlatforms = map[string]v1.Platform{
	"amd64":   {OS: "linux", Architecture: "amd64"},
	"aarch64": {OS: "linux", Architecture: "arm64"},
	"armv7":   {OS: "linux", Architecture: "arm", Variant: "v7"},
	"armhf":   {OS: "linux", Architecture: "arm", Variant: "v6"},
	"i386":    {OS: "linux", Architecture: "386"},
}

func readAppConfig(repo string) (appConfig, error) {
	var c appConfig
	b, err := os.ReadFile(filepath.Join(repo, appConfigPath))
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", appConfigPath, err)
	}
	if c.Version == "" || c.Image == "" || len(c.Arch) == 0 {
		return c, fmt.Errorf("%s: version, image and arch must all be set", appConfigPath)
	}
	for _, a := range c.Arch {
		if _, ok := hassPlatforms[a]; !ok {
			return c, fmt.Errorf("%s: arch %q is none the Supervisor knows (amd64, aarch64, armv7, armhf, i386)", appConfigPath, a)
		}
	}
	return c, nil
}

// composeTag is how the compose file tags the image: with the release.
var composeTag = regexp.MustCompile(`:\$\{VERSION(:-[^}]*)?\}$`)

// containerName is the image name (without tag) the compose file's
// cloud2mqtt service runs: the name the container image is published and
// loaded under.
func containerName(repo string) (string, error) {
	b, err := os.ReadFile(filepath.Join(repo, composePath))
	if err != nil {
		return "", err
	}
	var compose struct {
		Services map[string]struct {
			Image string `yaml:"image"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		return "", fmt.Errorf("%s: %w", composePath, err)
	}
	image := compose.Services["cloud2mqtt"].Image
	if !composeTag.MatchString(image) {
		return "", fmt.Errorf("%s: the cloud2mqtt service's image %q is not NAME:${VERSION...}", composePath, image)
	}
	return composeTag.ReplaceAllString(image, ""), nil
}

// imageNames are the two images' names without tags, as config.yaml and
// the compose file give them.
type imageNames struct {
	app       string // may hold {arch}, which the Supervisor fills in
	container string
	arch      []string // the app's architectures
	source    string   // the project's repository (config.yaml's url)
}

func readImageNames(repo string) (imageNames, error) {
	app, err := readAppConfig(repo)
	if err != nil {
		return imageNames{}, err
	}
	container, err := containerName(repo)
	if err != nil {
		return imageNames{}, err
	}
	return imageNames{app: app.Image, container: container, arch: app.Arch, source: app.URL}, nil
}

// layoutName is a name an image layout of the app can carry: the
// Supervisor's {arch} filled in with the first architecture listed.
func (n imageNames) layoutApp() string {
	return strings.ReplaceAll(n.app, "{arch}", n.arch[0])
}

// releasedEntry is the first released section of a changelog ("## [X.Y.Z]
// - DATE" up to the next "## ") and its version; "" when there is none.
func releasedEntry(b []byte) (version, entry string) {
	loc := regexp.MustCompile(`(?m)^## \[([0-9][^\]]*)\] - \d{4}-\d{2}-\d{2}\n`).FindSubmatchIndex(b)
	if loc == nil {
		return "", ""
	}
	rest := b[loc[0]:]
	if next := regexp.MustCompile(`(?m)^## `).FindIndex(rest[3:]); next != nil {
		rest = rest[:next[0]+3]
	}
	return string(b[loc[2]:loc[3]]), string(bytes.TrimRight(rest, "\n")) + "\n"
}

// checkVersions refuses a release whose version is not the one config.yaml
// (what the Supervisor pulls) and CHANGELOG.md's latest release name, or
// whose app changelog is not that release's entry. given is the version as
// the user gave it (the tag, v and all), shown in the messages.
func checkVersions(repo, given string) error {
	version := strings.TrimPrefix(given, "v")
	var problems []error
	app, err := readAppConfig(repo)
	switch {
	case err != nil:
		problems = append(problems, err)
	case app.Version != version:
		problems = append(problems, fmt.Errorf("the version %s (from %q) is not %s's %q: set version: %q there, or release %s", version, given, appConfigPath, app.Version, version, app.Version))
	}
	changelog, err := os.ReadFile(filepath.Join(repo, changelogPath))
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	latest, entry := releasedEntry(changelog)
	switch {
	case latest == "":
		problems = append(problems, fmt.Errorf("%s has no released entry (## [X.Y.Z] - YYYY-MM-DD): give the release one", changelogPath))
	case latest != version:
		problems = append(problems, fmt.Errorf("the version %s (from %q) is not %s's latest release %q: move the Unreleased lines under \"## [%s] - YYYY-MM-DD\"", version, given, changelogPath, latest, version))
	default:
		got, err := os.ReadFile(filepath.Join(repo, appChangelogPath))
		if err != nil || string(got) != "# Changelog\n\n"+entry {
			problems = append(problems, fmt.Errorf("%s is not %s's entry for %s: run go test ./internal/addon -run TestAppChangelog -update", appChangelogPath, changelogPath, version))
		}
	}
	return errors.Join(problems...)
}
