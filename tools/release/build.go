package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// target is one platform the release is built for.
type target struct {
	name   string // in the archive's name: amd64, arm64, armv7, armv6
	goarch string
	goarm  string // GOARM for 32-bit ARM
	deb    string // Debian architecture; "" = no package
	oci    string // OCI platform variant; "-" = no image
	hass   string // Home Assistant's architecture name
}

// targets: armv6 is for the first Raspberry Pis and the Zero (archive
// only: Debian's armhf is ARMv7, and image users on ARMv6 are rare).
var targets = []target{
	{name: "amd64", goarch: "amd64", deb: "amd64", oci: "", hass: "amd64"},
	{name: "arm64", goarch: "arm64", deb: "arm64", oci: "", hass: "aarch64"},
	{name: "armv7", goarch: "arm", goarm: "7", deb: "armhf", oci: "v7", hass: "armv7"},
	{name: "armv6", goarch: "arm", goarm: "6", oci: "-"},
}

// compile builds the daemon for t: static (no cgo), -trimpath, no build id
// or VCS stamp (they would differ between a checkout and a fresh clone),
// the version stamped into main.version.
func (r *release) compile(t target) (string, error) {
	bin := filepath.Join(r.work, "bin", t.name, "cloud2mqtt")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X main.version="+r.version,
		"-o", bin, "./cmd/bridge")
	cmd.Dir = r.repo
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_ENABLED", "GOOS", "GOARCH", "GOARM", "GOAMD64", "GOARM64", "GOFLAGS", "GOEXPERIMENT":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+t.goarch, "GOARM="+t.goarm, "GOAMD64=v1", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build for %s: %v\n%s", t.name, err, out)
	}
	return bin, nil
}
