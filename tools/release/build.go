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
}

// targets: the armhf package holds the ARMv6 build. Raspberry Pi OS's
// armhf is ARMv6 (the first Pis and the Zero run it), and an ARMv6 binary
// runs on every ARMv7 board too, so one package serves Raspberry Pi OS and
// Debian's armhf alike. armv7 keeps its archive and the images' linux/arm/v7.
var targets = []target{
	{name: "amd64", goarch: "amd64", deb: "amd64", oci: ""},
	{name: "arm64", goarch: "arm64", deb: "arm64", oci: ""},
	{name: "armv7", goarch: "arm", goarm: "7", oci: "v7"},
	{name: "armv6", goarch: "arm", goarm: "6", deb: "armhf", oci: "-"},
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
