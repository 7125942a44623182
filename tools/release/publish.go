package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

const publishUsage = `usage: release publish [-repo DIR] [-dist DIR] VERSION [REGISTRY]

Pushes the two images tools/release.sh VERSION wrote to -dist:
  - the Home Assistant app's (cloud2mqtt_VERSION_ha-app.tar) as IMAGE:VERSION,
    IMAGE and VERSION as deploy/homeassistant/cloud2mqtt/config.yaml names
    them (the Supervisor pulls that; one name per architecture when IMAGE
    holds {arch});
  - the container image (cloud2mqtt_VERSION_oci.tar) as NAME:VERSION, NAME
    as deploy/docker/docker-compose.yml names it, and NAME:latest unless
    VERSION is a pre-release (it has a -).
REGISTRY (like ghcr.io/you or 127.0.0.1:5000/test) replaces the registry and
owner of both names (default: config.yaml's). A registry on 127.0.0.1 or
localhost is spoken to in plain HTTP. Credentials: REGISTRY_USER and
REGISTRY_PASSWORD when both are set, else the Docker configuration (docker
login; DOCKER_CONFIG moves it). Each file is checked against SHA256SUMS
first; after the push every name is resolved for each platform, as the
Supervisor and docker pull it, and must give what was pushed.

flags:
`

func runPublish(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, publishUsage); fs.PrintDefaults() }
	repo := fs.String("repo", ".", "the cloud2mqtt repository (its root)")
	dist := fs.String("dist", "", "the directory tools/release.sh wrote (default: dist in -repo)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	if *dist == "" {
		*dist = filepath.Join(*repo, "dist")
	}
	given := fs.Arg(0)
	err := checkVersions(*repo, given)
	var names imageNames
	if err == nil {
		names, err = readImageNames(*repo)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = publish(ctx, publishOptions{dist: *dist, version: strings.TrimPrefix(given, "v"), names: names,
			registry: fs.Arg(1), getenv: getenv, log: stdout})
	}
	if err != nil {
		fmt.Fprintf(stderr, "publish: %v\n", err)
		return 1
	}
	return 0
}

// publishOptions is one publication.
type publishOptions struct {
	dist, version string
	names         imageNames // as the repository gives them
	registry      string     // "" keeps the names' registry and owner
	getenv        func(string) string
	log           io.Writer
	transport     http.RoundTripper // nil: remote's default (tests)
}

// containerPlatforms are the container image's platforms (docker pulls
// the host's).
var containerPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
	{OS: "linux", Architecture: "arm", Variant: "v7"},
}

// push is one image index and where it goes.
type push struct {
	file      string
	index     v1.ImageIndex
	tags      []string               // full references
	platforms map[string]v1.Platform // what each tag must resolve to, by a label
}

func publish(ctx context.Context, o publishOptions) error {
	kc, err := keychain(o.getenv)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithUserAgent("cloud2mqtt-publish")}
	if o.transport != nil {
		opts = append(opts, remote.WithTransport(o.transport))
	}
	work, err := os.MkdirTemp("", "cloud2mqtt-publish-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pushes, err := o.plan(work)
	if err != nil {
		return err
	}
	for _, p := range pushes {
		for _, tag := range p.tags {
			ref, err := name.NewTag(tag)
			if err != nil {
				return fmt.Errorf("%s: %w", tag, err)
			}
			if err := remote.WriteIndex(ref, p.index, opts...); err != nil {
				return pushError(ref, err)
			}
			d, _ := p.index.Digest()
			fmt.Fprintf(o.log, "pushed %s (%s) as %s\n", p.file, d, ref)
		}
	}
	return verify(pushes, opts)
}

// plan checks the two files against SHA256SUMS, unpacks them into work
// and works out their tags; nothing is pushed before all of that holds.
func (o publishOptions) plan(work string) ([]push, error) {
	app, container := o.names.app, o.names.container
	if o.registry != "" {
		reg := strings.TrimSuffix(o.registry, "/")
		app, container = reg+"/"+path.Base(app), reg+"/"+path.Base(container)
	}
	sums, err := os.ReadFile(filepath.Join(o.dist, "SHA256SUMS"))
	if err != nil {
		return nil, fmt.Errorf("%w (run tools/release.sh %s first)", err, o.version)
	}
	appPush := push{file: fmt.Sprintf("cloud2mqtt_%s_ha-app.tar", o.version), platforms: map[string]v1.Platform{}}
	for _, a := range o.names.arch {
		p, ok := hassPlatforms[a]
		if !ok {
			return nil, fmt.Errorf("the app's arch %q is none the Supervisor knows", a)
		}
		appPush.platforms[a] = p
		tag := strings.ReplaceAll(app, "{arch}", a) + ":" + o.version
		if len(appPush.tags) == 0 || appPush.tags[len(appPush.tags)-1] != tag {
			appPush.tags = append(appPush.tags, tag)
		}
	}
	containerPush := push{file: fmt.Sprintf("cloud2mqtt_%s_oci.tar", o.version), tags: []string{container + ":" + o.version},
		platforms: map[string]v1.Platform{}}
	if !strings.Contains(o.version, "-") {
		containerPush.tags = append(containerPush.tags, container+":latest")
	}
	for _, p := range containerPlatforms {
		containerPush.platforms[p.String()] = p
	}
	pushes := []push{appPush, containerPush}
	for i := range pushes {
		p := &pushes[i]
		file := filepath.Join(o.dist, p.file)
		if err := checkSum(sums, file); err != nil {
			return nil, err
		}
		if p.index, err = openLayoutTar(file, filepath.Join(work, p.file)); err != nil {
			return nil, fmt.Errorf("%s: %w", p.file, err)
		}
		for label, want := range p.platforms {
			if _, err := manifestFor(p.index, want); err != nil {
				return nil, fmt.Errorf("%s has no %s image for %s: %w", p.file, want.String(), label, err)
			}
		}
	}
	return pushes, nil
}

// verify resolves every tag for every platform as a puller would, and
// compares the manifest it gets with the one pushed.
func verify(pushes []push, opts []remote.Option) error {
	for _, p := range pushes {
		for _, tag := range p.tags {
			ref, err := name.NewTag(tag)
			if err != nil {
				return err
			}
			for _, plat := range p.platforms {
				want, _ := manifestFor(p.index, plat)
				img, err := remote.Image(ref, append(opts, remote.WithPlatform(plat))...)
				if err != nil {
					return fmt.Errorf("resolve %s for %s after the push: %w", ref, plat.String(), err)
				}
				got, err := img.Digest()
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("%s for %s resolves to %s, not the pushed %s", ref, plat.String(), got, want)
				}
			}
		}
	}
	return nil
}

// manifestFor is the digest of an index's manifest for platform p: the
// same OS, architecture and variant.
func manifestFor(idx v1.ImageIndex, p v1.Platform) (v1.Hash, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture && d.Platform.Variant == p.Variant {
			return d.Digest, nil
		}
	}
	return v1.Hash{}, fmt.Errorf("the index has no manifest for %s", p.String())
}

// keychain: REGISTRY_USER and REGISTRY_PASSWORD when set (for the one
// registry publish talks to), else the Docker configuration.
func keychain(getenv func(string) string) (authn.Keychain, error) {
	user, password := getenv("REGISTRY_USER"), getenv("REGISTRY_PASSWORD")
	switch {
	case user != "" && password != "":
		return staticKeychain{authn.FromConfig(authn.AuthConfig{Username: user, Password: password})}, nil
	case user != "" || password != "":
		return nil, errors.New("REGISTRY_USER and REGISTRY_PASSWORD go together: set both, or neither to use the Docker configuration (docker login)")
	}
	return authn.DefaultKeychain, nil
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

// pushError names what to do about a refused push.
func pushError(ref name.Tag, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("push %s: %w: the registry refused the credentials; set REGISTRY_USER and REGISTRY_PASSWORD or run docker login %s (a GitHub Actions token may push only to its repository owner's packages: the owner in config.yaml's image must be that owner)", ref, err, ref.RegistryStr())
	}
	return fmt.Errorf("push %s: %w", ref, err)
}

// checkSum compares a file with its line in SHA256SUMS.
func checkSum(sums []byte, file string) error {
	base := filepath.Base(file)
	var want string
	for _, line := range strings.Split(string(sums), "\n") {
		if sum, n, ok := strings.Cut(line, "  "); ok && n == base {
			want = sum
		}
	}
	if want == "" {
		return fmt.Errorf("SHA256SUMS has no line for %s", base)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s: sha256 %s, SHA256SUMS says %s: build the release again", base, got, want)
	}
	return nil
}

// openLayoutTar unpacks an OCI image layout tar (as tools/release writes
// it) into dir and returns the one image index its index.json names (read
// from dir as it is used).
func openLayoutTar(file, dir string) (v1.ImageIndex, error) {
	if err := untar(file, dir); err != nil {
		return nil, err
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("index.json names %d images, want the one image index tools/release writes", len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// untar writes a tar's directories and regular files under dir; any other
// entry, or a name that leaves dir, is an error.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("%s: %q leaves the layout", file, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFrom(p, tr)
		default:
			err = fmt.Errorf("%s: %q is neither a file nor a directory", file, h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func writeFrom(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
