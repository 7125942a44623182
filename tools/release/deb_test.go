//go:build release

package main

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func dpkgDeb(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestDebPackages(t *testing.T) {
	for _, tg := range targets {
		if tg.deb == "" {
			continue
		}
		t.Run(tg.deb, func(t *testing.T) {
			deb := filepath.Join(dist, fmt.Sprintf("cloud2mqtt_%s_%s.deb", testVersion, tg.deb))
			for field, want := range map[string]string{
				"Package": "cloud2mqtt", "Version": "0.0.0~test", "Architecture": tg.deb, "Section": "net",
				"Priority": "optional", "Maintainer": debMaintainer,
			} {
				if got := strings.TrimSpace(dpkgDeb(t, "-f", deb, field)); got != want {
					t.Errorf("%s: %q, want %q", field, got, want)
				}
			}
			if d := dpkgDeb(t, "-f", deb, "Description"); !strings.HasPrefix(d, "bridge a smart-home") || strings.Count(d, "\n") < 3 {
				t.Errorf("Description %q: want a synopsis and a long description", d)
			}
			if deps := strings.TrimSpace(dpkgDeb(t, "-f", deb, "Depends")); deps != "" {
				t.Errorf("Depends: %q; the binary is static", deps)
			}
			control := t.TempDir()
			dpkgDeb(t, "-e", deb, control)
			if b, _ := os.ReadFile(filepath.Join(control, "conffiles")); string(b) != "/etc/cloud2mqtt/cloud2mqtt.env\n" {
				t.Errorf("conffiles %q", b)
			}
			for _, s := range []string{"postinst", "prerm", "postrm"} {
				b, err := os.ReadFile(filepath.Join(control, s))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte("systemctl enable")) || bytes.Contains(b, []byte("systemctl start")) ||
					bytes.Contains(b, []byte("--now")) || bytes.Contains(b, []byte("deb-systemd")) {
					t.Errorf("%s enables or starts the bridge before its key is set:\n%s", s, b)
				}
			}
			listing := dpkgDeb(t, "-c", deb)
			for _, want := range []string{
				"-rwxr-xr-x root/root", "./usr/bin/cloud2mqtt\n",
				"-rw-r--r-- root/root", "./usr/lib/systemd/system/cloud2mqtt.service\n",
				"-rw------- root/root", "./etc/cloud2mqtt/cloud2mqtt.env\n",
				"./usr/share/doc/cloud2mqtt/README.md\n", "./usr/share/doc/cloud2mqtt/copyright\n",
			} {
				if !strings.Contains(listing, want) {
					t.Errorf("contents lack %q:\n%s", want, listing)
				}
			}
			root := t.TempDir()
			dpkgDeb(t, "-x", deb, root)
			checkBinary(t, tg, filepath.Join(root, "usr/bin/cloud2mqtt"))
			unit, _ := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/cloud2mqtt.service"))
			for _, want := range []string{"\nExecStart=/usr/bin/cloud2mqtt\n", "\nEnvironmentFile=/etc/cloud2mqtt/cloud2mqtt.env\n",
				"\nLoadCredential=cloud_api_key:/etc/cloud2mqtt/api_key\nSetCredential=cloud_api_key:\\n\n", "\nStateDirectory=cloud2mqtt\n"} {
				if !bytes.Contains(unit, []byte(want)) {
					t.Errorf("the unit lacks %q", strings.TrimSpace(want))
				}
			}
			env, _ := os.ReadFile(filepath.Join(root, "etc/cloud2mqtt/cloud2mqtt.env"))
			if example, _ := os.ReadFile(filepath.Join(repoDir, "config.example.env")); !bytes.Equal(env, example) {
				t.Error("/etc/cloud2mqtt/cloud2mqtt.env is not config.example.env")
			}
		})
	}
}

// goarm is the GOARM a binary's build info records.
func goarm(t *testing.T, path string) string {
	t.Helper()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bi.Settings {
		if s.Key == "GOARM" {
			return s.Value
		}
	}
	return ""
}

// Raspberry Pi OS's armhf is ARMv6 (the first Pis and the Zero): its
// package holds the GOARM=6 build, the same binary as the armv6 archive;
// armv7 keeps an archive of its own.
func TestRaspberryPiOSPackageIsARMv6(t *testing.T) {
	root := t.TempDir()
	dpkgDeb(t, "-x", filepath.Join(dist, "cloud2mqtt_"+testVersion+"_armhf.deb"), root)
	debBin := filepath.Join(root, "usr/bin/cloud2mqtt")
	if got := goarm(t, debBin); got != "6" {
		t.Errorf("the armhf package's binary says GOARM=%q, want 6", got)
	}
	archive := func(name string) string {
		base := fmt.Sprintf("cloud2mqtt_%s_linux_%s", testVersion, name)
		_, files := readTarGz(t, filepath.Join(dist, base+".tar.gz"))
		p := filepath.Join(t.TempDir(), "cloud2mqtt")
		if err := os.WriteFile(p, files[base+"/cloud2mqtt"], 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v6, v7 := archive("armv6"), archive("armv7")
	if a, b := readAll(t, debBin), readAll(t, v6); !bytes.Equal(a, b) {
		t.Error("the armhf package's binary is not the armv6 archive's")
	}
	if got := goarm(t, v6); got != "6" {
		t.Errorf("the armv6 archive says GOARM=%q", got)
	}
	if got := goarm(t, v7); got != "7" {
		t.Errorf("the armv7 archive says GOARM=%q", got)
	}
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
