//go:build release

package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// openLayout unpacks an image tar and returns its one image index.
func openLayout(t *testing.T, name string) (v1.ImageIndex, v1.Descriptor) {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	hs, files := readTar(t, f)
	for _, h := range hs {
		if !h.ModTime.Equal(epoch) || h.Uid != 0 {
			t.Errorf("%s: %s has mtime %v uid %d", name, h.Name, h.ModTime, h.Uid)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
		} else if err := os.WriteFile(p, files[h.Name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ociLayout struct{ ImageLayoutVersion string }
	if err := json.Unmarshal(files["oci-layout"], &ociLayout); err != nil || ociLayout.ImageLayoutVersion != "1.0.0" {
		t.Errorf("oci-layout: %q", files["oci-layout"])
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index.json: %v, %v; want one image index", m, err)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Errorf("%s does not validate (digests, sizes, configs): %v", name, err)
	}
	return idx, m.Manifests[0]
}

// imageFiles is an image's root file system: headers and file contents.
func imageFiles(t *testing.T, img v1.Image) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	hs, files := readTar(t, rc)
	byName := map[string]*tar.Header{}
	for _, h := range hs {
		byName[strings.TrimSuffix(h.Name, "/")] = h
	}
	return byName, files
}

func TestOCIImage(t *testing.T) {
	// Named as the compose file and the app's config.yaml name them: what
	// docker load gives is what compose runs and publish pushes.
	names := repoNames(t)
	for _, c := range []struct {
		file, ref, user string
		state           bool
	}{
		{"cloud2mqtt_" + testVersion + "_oci.tar", "ghcr.io/cloud2mqtt/cloud2mqtt:" + testVersion, "65532:65532", true},
		{"cloud2mqtt_" + testVersion + "_ha-app.tar", "ghcr.io/cloud2mqtt/cloud2mqtt-ha-app:" + testVersion, "0:0", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			if !strings.HasPrefix(c.ref, names.container+":") && !strings.HasPrefix(c.ref, names.app+":") {
				t.Fatalf("the repository names the images %s and %s; update this test", names.container, names.app)
			}
			idx, desc := openLayout(t, c.file)
			if desc.Annotations["org.opencontainers.image.ref.name"] != c.ref || desc.Annotations["io.containerd.image.name"] != c.ref {
				t.Errorf("names %v, want %s", desc.Annotations, c.ref)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var platforms []string
			for _, d := range m.Manifests {
				platforms = append(platforms, d.Platform.String())
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Platform().String() != d.Platform.String() {
					t.Errorf("%s: the config says %s", d.Platform, cf.Platform())
				}
				cfg := cf.Config
				if cfg.User != c.user || strings.Join(cfg.Entrypoint, " ") != "/usr/local/bin/cloud2mqtt" || len(cfg.Cmd) != 0 {
					t.Errorf("%s: user %q entrypoint %q cmd %q", d.Platform, cfg.User, cfg.Entrypoint, cfg.Cmd)
				}
				_, vol := cfg.Volumes["/var/lib/cloud2mqtt"]
				hasState := false
				for _, e := range cfg.Env {
					hasState = hasState || e == "STATE_DIR=/var/lib/cloud2mqtt"
				}
				if vol != c.state || hasState != c.state {
					t.Errorf("%s: volume %v, STATE_DIR %v; want %v", d.Platform, vol, hasState, c.state)
				}
				if !cf.Created.Time.Equal(epoch) || cfg.Labels["org.opencontainers.image.version"] != testVersion ||
					cfg.Labels["org.opencontainers.image.source"] != names.source || names.source == "" {
					t.Errorf("%s: created %v, labels %v", d.Platform, cf.Created, cfg.Labels)
				}
				hs, files := imageFiles(t, img)
				if h := hs["var/lib/cloud2mqtt"]; h == nil || h.Uid != imageUID || h.Mode&0o777 != 0o700 {
					t.Errorf("%s: /var/lib/cloud2mqtt %+v, want a directory of uid %d, mode 0700", d.Platform, h, imageUID)
				}
				if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
					t.Errorf("%s: /etc/passwd names no user 65532", d.Platform)
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(files[certFile]) || bytes.Count(files[certFile], []byte("BEGIN CERTIFICATE")) < 100 {
					t.Errorf("%s: /%s is not a CA bundle", d.Platform, certFile)
				}
				if d.Platform.Architecture == "amd64" {
					runFromRootfs(t, hs, files, c.user)
				}
			}
			if got := strings.Join(platforms, " "); got != "linux/amd64 linux/arm64 linux/arm/v7" {
				t.Errorf("platforms %s", got)
			}
			// skopeo (as docker and podman do) reads the layout.
			if _, err := exec.LookPath("skopeo"); err == nil {
				out, err := exec.Command("skopeo", "copy", "--all", "--quiet", "oci-archive:"+filepath.Join(dist, c.file)+":"+c.ref, "dir:"+t.TempDir()).CombinedOutput()
				if err != nil {
					t.Errorf("skopeo copy: %v\n%s", err, out)
				}
			}
		})
	}
}

// runFromRootfs unpacks the image's files and runs the binary inside them
// as the image's user: the image alone is enough to run it.
func runFromRootfs(t *testing.T, hs map[string]*tar.Header, files map[string][]byte, user string) {
	t.Helper()
	root := t.TempDir()
	for name, h := range hs {
		p := filepath.Join(root, filepath.FromSlash(name))
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, os.FileMode(h.Mode&0o7777))
		} else {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, files[h.Name], os.FileMode(h.Mode&0o777)); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := exec.Command("chroot", "--userspec="+user, root, "/usr/local/bin/cloud2mqtt", "-version").CombinedOutput()
	if err != nil || string(out) != "cloud2mqtt "+testVersion+"\n" {
		t.Errorf("cloud2mqtt -version in the image's root file system as %s: %q %v", user, out, err)
	}
}
