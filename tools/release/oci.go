package main

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's user (distroless's nonroot) and layout.
const (
	imageUID   = 65532
	imageBin   = "usr/local/bin/cloud2mqtt"
	imageState = "/var/lib/cloud2mqtt"
	certFile   = "etc/ssl/certs/ca-certificates.crt"
)

// imageKind is one of the two images: the general one (non-root, state on
// a volume) and the Home Assistant app's (root, as the Supervisor's /data
// is root's; state in /data, which the binary's app mode chooses).
type imageKind struct {
	file    string // artifact name with %s for the version
	ref     string // the name and tag the layout's index gives (docker load, podman load)
	user    string
	env     []string
	volumes map[string]struct{}
	labels  map[string]string
}

func (r *release) imageKinds(names imageNames) []imageKind {
	created := r.epoch.Format(time.RFC3339)
	common := func(title string) map[string]string {
		l := map[string]string{
			"org.opencontainers.image.title":       title,
			"org.opencontainers.image.version":     r.version,
			"org.opencontainers.image.created":     created,
			"org.opencontainers.image.licenses":    "MIT",
			"org.opencontainers.image.description": "Bridge a smart-home vendor's cloud API to MQTT and Home Assistant",
		}
		if names.source != "" {
			// GitHub's registry links a package with this label to the
			// repository, whose workflows may then push new versions.
			l["org.opencontainers.image.source"] = names.source
		}
		return l
	}
	app := common("cloud2mqtt Home Assistant app")
	app["io.hass.type"] = "addon"
	app["io.hass.version"] = r.version
	app["io.hass.name"] = "cloud2mqtt"
	return []imageKind{
		{
			file: "cloud2mqtt_%s_oci.tar", ref: names.container + ":" + r.version,
			user:    fmt.Sprintf("%d:%d", imageUID, imageUID),
			env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "STATE_DIR=" + imageState},
			volumes: map[string]struct{}{imageState: {}},
			labels:  common("cloud2mqtt"),
		},
		{
			file: "cloud2mqtt_%s_ha-app.tar", ref: names.layoutApp() + ":" + r.version,
			user:   "0:0",
			env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			labels: app,
		},
	}
}

// caBundle is the Mozilla (NSS) root certificates of Go's
// x509roots/fallback module as a PEM file, in the module's order. Roots
// that NSS trusts only for certificates issued before a date are left out:
// a PEM file cannot say so.
func caBundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// rootfs is the image's one layer: the binary, CA certificates, a passwd
// and group naming the non-root user, and the state directory it owns.
func rootfs(binary, certs []byte) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", imageUID, imageUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", imageUID)
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: certFile, mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: imageUID, gid: imageUID},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: imageBin, mode: 0o755, data: binary},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: "var/lib/cloud2mqtt/", mode: 0o700, uid: imageUID, gid: imageUID},
	}
}

// images writes both image layouts.
func (r *release) images(bins map[string]string) error {
	certs := caBundle()
	layers := map[string]v1.Layer{}
	for _, t := range targets {
		if t.oci == "-" {
			continue
		}
		binary, err := os.ReadFile(bins[t.name])
		if err != nil {
			return err
		}
		var tb bytes.Buffer
		if err := writeTar(&tb, rootfs(binary, certs), r.epoch); err != nil {
			return err
		}
		data := tb.Bytes()
		layers[t.name], err = tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(9))
		if err != nil {
			return err
		}
	}
	names, err := readImageNames(r.repo)
	if err != nil {
		return err
	}
	for _, k := range r.imageKinds(names) {
		if err := r.image(k, layers); err != nil {
			return err
		}
	}
	return nil
}

// image writes one multi-platform OCI image layout as a tar.
func (r *release) image(k imageKind, layers map[string]v1.Layer) error {
	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	for _, t := range targets {
		if t.oci == "-" {
			continue
		}
		platform := v1.Platform{OS: "linux", Architecture: t.goarch, Variant: t.oci}
		cfg := &v1.ConfigFile{
			Architecture: platform.Architecture,
			OS:           platform.OS,
			Variant:      platform.Variant,
			Created:      v1.Time{Time: r.epoch},
			Config: v1.Config{
				User:       k.user,
				Entrypoint: []string{"/" + imageBin},
				Env:        k.env,
				WorkingDir: "/",
				Volumes:    k.volumes,
				Labels:     k.labels,
			},
			RootFS: v1.RootFS{Type: "layers"},
		}
		img, err := mutate.ConfigFile(empty.Image, cfg)
		if err != nil {
			return err
		}
		img = mutate.MediaType(img, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layers[t.name],
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: r.epoch}, CreatedBy: "tools/release " + r.version, Comment: "cloud2mqtt static binary"},
		})
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}

	dir, err := os.MkdirTemp(r.work, "oci-")
	if err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		// podman load and skopeo read the OCI name; docker load (25 and
		// later) and containerd read theirs, which must be qualified.
		"org.opencontainers.image.ref.name": k.ref,
		"io.containerd.image.name":          qualified(k.ref),
	})); err != nil {
		return err
	}
	entries, err := dirEntries(dir)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := writeTar(&out, entries, r.epoch); err != nil {
		return err
	}
	return r.writeOut(fmt.Sprintf(k.file, r.version), out.Bytes())
}

// dirEntries reads a directory tree into tar entries, owned by root.
func dirEntries(dir string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, entry{name: rel + "/", mode: 0o755})
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, entry{name: rel, mode: 0o644, data: b})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// qualified is ref as containerd names images: with its registry, Docker
// Hub's (and its library/) when it has none.
func qualified(ref string) string {
	first, rest, found := strings.Cut(ref, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if !found {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + first + "/" + rest
}
