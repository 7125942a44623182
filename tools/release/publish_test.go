//go:build release

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// supervisorPlatform is the platform the Home Assistant Supervisor pulls
// for each architecture it runs on (its docker/interface.py MAP_ARCH at
// 090ef31ec: it passes platform= to the pull and then checks the image's
// os/architecture starts with it).
var supervisorPlatform = map[string]string{"amd64": "linux/amd64", "aarch64": "linux/arm64"}

// testRegistry is go-containerregistry's in-process registry on loopback,
// behind an optional basic-auth check. It counts the requests it gets.
type testRegistry struct {
	host     string
	requests atomic.Int64
}

func startRegistry(t *testing.T, user, password string) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if u, p, _ := req.BasicAuth(); user != "" && (u != user || p != password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func noEnv(string) string { return "" }

func publishTo(t *testing.T, names imageNames, registry string, getenv func(string) string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := publish(context.Background(), publishOptions{dist: dist, version: testVersion, names: names, registry: registry, getenv: getenv, log: &out})
	return out.String(), err
}

func repoNames(t *testing.T) imageNames {
	t.Helper()
	n, err := readImageNames(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pullAsSupervisor resolves the app's image as the Supervisor does for
// arch: config.yaml's image with {arch} filled in, tagged with its
// version, pulled for the arch's platform; the image's os/architecture
// must start with that platform. For amd64 the binary is run from the
// pulled layers.
func pullAsSupervisor(t *testing.T, image, arch string) {
	t.Helper()
	want, ok := supervisorPlatform[arch]
	if !ok {
		t.Fatalf("the Supervisor pulls no architecture %q", arch)
	}
	ref, err := name.ParseReference(strings.ReplaceAll(image, "{arch}", arch) + ":" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	pullAndRun(t, ref, want, "0:0")
}

// pullAndRun pulls ref for platform (os/arch[/variant]) and, on amd64,
// runs -version from its layers as user.
func pullAndRun(t *testing.T, ref name.Reference, platform, user string) {
	t.Helper()
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithPlatform(*p))
	if err != nil {
		t.Fatalf("pull %s for %s: %v", ref, platform, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Platform().String(); !strings.HasPrefix(got, platform) {
		t.Errorf("%s for %s: the image is %s", ref, platform, got)
	}
	if cf.Config.User != user {
		t.Errorf("%s for %s: user %q, want %q", ref, platform, cf.Config.User, user)
	}
	if p.Architecture == "amd64" {
		hs, files := imageFiles(t, img)
		runFromRootfs(t, hs, files, user)
	}
}

// TestPublishThenPullAsTheSupervisor: publish to a registry on loopback,
// then resolve the app's image:version per architecture as the Supervisor
// pulls it and the container image per platform as docker does, and run
// the amd64 binary from what was pulled.
func TestPublishThenPullAsTheSupervisor(t *testing.T) {
	reg := startRegistry(t, "", "")
	names := repoNames(t)
	out, err := publishTo(t, names, reg.host+"/test-owner", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	app := reg.host + "/test-owner/" + filepath.Base(names.app)
	container := reg.host + "/test-owner/" + filepath.Base(names.container)
	for _, want := range []string{"as " + app + ":" + testVersion, "as " + container + ":" + testVersion} {
		if !strings.Contains(out, want) {
			t.Errorf("publish's output lacks %q:\n%s", want, out)
		}
	}
	for _, arch := range names.arch {
		t.Run("app "+arch, func(t *testing.T) { pullAsSupervisor(t, app, arch) })
	}
	for _, p := range []string{"linux/amd64", "linux/arm64", "linux/arm/v7"} {
		t.Run("container "+p, func(t *testing.T) {
			ref, err := name.ParseReference(container + ":" + testVersion)
			if err != nil {
				t.Fatal(err)
			}
			pullAndRun(t, ref, p, "65532:65532")
		})
	}
	// A pre-release is not "latest".
	latest, err := name.ParseReference(container + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(latest); err == nil {
		t.Errorf("%s:latest exists after publishing the pre-release %s", container, testVersion)
	}
}

// An app whose image holds {arch} (one name per architecture, as the
// Supervisor allows) gets the image under each name.
func TestPublishPerArchitectureNames(t *testing.T) {
	reg := startRegistry(t, "", "")
	names := repoNames(t)
	names.app = "ghcr.io/someone/{arch}-cloud2mqtt"
	if _, err := publishTo(t, names, reg.host+"/o", noEnv); err != nil {
		t.Fatal(err)
	}
	for _, arch := range names.arch {
		pullAsSupervisor(t, reg.host+"/o/{arch}-cloud2mqtt", arch)
	}
}

// Credentials come from REGISTRY_USER/REGISTRY_PASSWORD or the Docker
// configuration; without them the refusal says what to do.
func TestPublishCredentials(t *testing.T) {
	reg := startRegistry(t, "robot", "s3cret-password")
	names := repoNames(t)
	docker := t.TempDir()
	t.Setenv("DOCKER_CONFIG", docker)

	_, err := publishTo(t, names, reg.host+"/o", noEnv)
	if err == nil || !strings.Contains(err.Error(), "REGISTRY_USER") || !strings.Contains(err.Error(), "docker login") {
		t.Errorf("without credentials: %v, want a refusal naming REGISTRY_USER and docker login", err)
	}
	half := func(k string) string { return map[string]string{"REGISTRY_USER": "robot"}[k] }
	if _, err := publishTo(t, names, reg.host+"/o", half); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("REGISTRY_USER without REGISTRY_PASSWORD: %v", err)
	}
	env := func(k string) string {
		return map[string]string{"REGISTRY_USER": "robot", "REGISTRY_PASSWORD": "s3cret-password"}[k]
	}
	if out, err := publishTo(t, names, reg.host+"/env", env); err != nil {
		t.Errorf("with REGISTRY_USER and REGISTRY_PASSWORD: %v", err)
	} else if strings.Contains(out, "s3cret-password") {
		t.Error("publish printed the password")
	}
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret-password"))
	if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+reg.host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := publishTo(t, names, reg.host+"/docker-config", noEnv); err != nil {
		t.Errorf("with the Docker configuration: %v", err)
	}
}

// A file that is not the one SHA256SUMS names is never pushed.
func TestPublishChecksTheSums(t *testing.T) {
	reg := startRegistry(t, "", "")
	tampered := t.TempDir()
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(dist, e.Name()), filepath.Join(tampered, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	sums, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	os.Remove(filepath.Join(tampered, "SHA256SUMS"))
	bad := strings.Replace(string(sums), "  cloud2mqtt_"+testVersion+"_oci.tar", "x  cloud2mqtt_"+testVersion+"_oci.tar", 1)
	if err := os.WriteFile(filepath.Join(tampered, "SHA256SUMS"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err = publish(context.Background(), publishOptions{dist: tampered, version: testVersion, names: repoNames(t), registry: reg.host + "/o", getenv: noEnv, log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "SHA256SUMS") {
		t.Errorf("a file that differs from SHA256SUMS: %v", err)
	}
	if n := reg.requests.Load(); n != 0 {
		t.Errorf("the registry got %d requests; nothing may be pushed before every file is checked", n)
	}
}
