// Command release builds every artifact of a cloud2mqtt release into one
// directory (tools/release.sh runs it with dist/):
//
//   - cloud2mqtt_VERSION_linux_{amd64,arm64,armv7,armv6}.tar.gz: the static
//     binary with LICENSE, README.md, config.example.env and the systemd unit;
//   - cloud2mqtt_VERSION_{amd64,arm64,armhf}.deb, built with nfpm;
//   - cloud2mqtt_VERSION_oci.tar: a multi-platform OCI image layout (linux/amd64,
//     linux/arm64, linux/arm/v7), non-root, built with go-containerregistry;
//   - cloud2mqtt_VERSION_ha-app.tar: the same binary as the Home Assistant
//     app's image (root in the container, state in the Supervisor's /data);
//   - SHA256SUMS over all of them.
//
// "release publish" (tools/publish.sh) pushes the two images to a registry
// (publish.go). Both refuse a VERSION that is not the version of the app's
// config.yaml and CHANGELOG.md's latest release (repo.go).
//
// The build is reproducible: every time stamp is SOURCE_DATE_EPOCH (the
// commit's time when the variable is not set), every owner root (or the
// image's user), every list sorted, no gzip header carries a time or name,
// and the binaries are built with -trimpath and an empty build id. Two runs
// of the same commit and VERSION give byte-identical files.
//
// It is its own module so that nfpm and go-containerregistry (and what they
// pull in) stay out of the daemon's go.mod.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: release [-repo DIR] [-out DIR] VERSION
       release publish [-repo DIR] [-dist DIR] VERSION [REGISTRY]

Builds the release artifacts of VERSION (like 0.1.0; a leading v is dropped)
from the repository at -repo into -out. VERSION must be the version of the
Home Assistant app's config.yaml and CHANGELOG.md's latest release.
SOURCE_DATE_EPOCH (seconds) fixes every time stamp; unset, it is the time of
the repository's last commit. "release publish -h" explains publishing.

flags:
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "publish" {
		return runPublish(args[1:], os.Getenv, stdout, stderr)
	}
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	repo := fs.String("repo", ".", "the cloud2mqtt repository (its root)")
	out := fs.String("out", "dist", "directory the artifacts are written to")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	r, err := newRelease(*repo, *out, fs.Arg(0), os.Getenv("SOURCE_DATE_EPOCH"))
	if err == nil {
		err = checkVersions(r.repo, fs.Arg(0))
	}
	if err == nil {
		r.log = stdout
		err = r.build()
	}
	if err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 1
	}
	return 0
}

// release is one build of every artifact.
type release struct {
	repo, out string
	version   string    // without a leading v
	epoch     time.Time // SOURCE_DATE_EPOCH
	log       io.Writer
	work      string // scratch directory, removed at the end
	files     []string
}

var versionRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~-]*$`)

func newRelease(repo, out, version, epoch string) (*release, error) {
	version = strings.TrimPrefix(version, "v")
	if !versionRE.MatchString(version) {
		return nil, fmt.Errorf("version %q: give one that starts with a digit and has only letters, digits and . + ~ -, like 0.1.0 or 0.2.0-rc1", version)
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(repo, "cmd", "bridge")); err != nil {
		return nil, fmt.Errorf("-repo %s is not the cloud2mqtt repository (no cmd/bridge): %w", repo, err)
	}
	if epoch == "" {
		b, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return nil, fmt.Errorf("SOURCE_DATE_EPOCH is not set and git cannot give the last commit's time (%v): set SOURCE_DATE_EPOCH to a time in seconds", err)
		}
		epoch = strings.TrimSpace(string(b))
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || sec < 0 {
		return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a time in seconds since 1970", epoch)
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	return &release{repo: repo, out: out, version: version, epoch: time.Unix(sec, 0).UTC(), log: io.Discard}, nil
}

func (r *release) logf(format string, a ...any) { fmt.Fprintf(r.log, format+"\n", a...) }

func (r *release) build() (err error) {
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return err
	}
	r.work, err = os.MkdirTemp("", "cloud2mqtt-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(r.work)
	r.logf("cloud2mqtt %s, SOURCE_DATE_EPOCH=%d (%s)", r.version, r.epoch.Unix(), r.epoch.Format(time.RFC3339))

	bins := map[string]string{}
	for _, t := range targets {
		start := time.Now()
		bin, err := r.compile(t)
		if err != nil {
			return err
		}
		bins[t.name] = bin
		r.logf("built %-6s in %.1fs", t.name, time.Since(start).Seconds())
	}
	for _, t := range targets {
		if err := r.archive(t, bins[t.name]); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if t.deb == "" {
			continue
		}
		if err := r.deb(t, bins[t.name], r.version); err != nil {
			return err
		}
	}
	if err := r.images(bins); err != nil {
		return err
	}
	return r.sums()
}

// add records an artifact written to the output directory.
func (r *release) add(name string) {
	r.files = append(r.files, name)
	r.logf("wrote %s", filepath.Join(r.out, name))
}

// readRepo reads a file of the repository.
func (r *release) readRepo(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.repo, filepath.FromSlash(path)))
}
