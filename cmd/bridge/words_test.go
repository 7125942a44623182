package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/config"
)

// TestWordsNameTheProgram: the usage and the errors name the binary the
// README builds (cloud2mqtt), and a configuration error lists each problem
// once, without the package prefix.
func TestWordsNameTheProgram(t *testing.T) {
	code, out, _ := runBridge(t, nil, "-h")
	if code != 0 || !strings.Contains(out, "usage: cloud2mqtt [flags]") || strings.Contains(out, "bridge [flags]") {
		t.Errorf("-h: code %d\n%s", code, out)
	}
	code, _, errOut := runBridge(t, map[string]string{"POLL_INTERVAL": "soon", "LOG_LEVEL": "loud"})
	if code != exitConfig {
		t.Errorf("code %d, want %d", code, exitConfig)
	}
	for _, want := range []string{
		"cloud2mqtt: the configuration has problems:\n",
		"\n  POLL_INTERVAL=\"soon\" is not a duration: use seconds (60) or a number with a unit (60s, 1m, 6h)\n",
		"\n  LOG_LEVEL=\"loud\" is not a level",
		"\n  CLOUD_BASE_URL is empty",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "config: ") || strings.Contains(errOut, "bridge: ") {
		t.Errorf("a package prefix in the user's message:\n%s", errOut)
	}
	// POLL_INTERVAL=60 is a minute, as 60s is.
	code, _, errOut = runBridge(t, map[string]string{"POLL_INTERVAL": "60", "CLOUD_BASE_URL": "https://cloud.example/router/api/v1", "CLOUD_API_KEY": "k"})
	if code != exitConfig || strings.Contains(errOut, "POLL_INTERVAL") || !strings.Contains(errOut, "set it to https://cloud.example (scheme and host only)") {
		t.Errorf("code %d:\n%s", code, errOut)
	}
}

// TestNoFormattingArtefacts: no word of the verdict on the settings (what
// -check prints and the daemon refuses or logs) carries a formatting
// artefact of fmt's (%!w(<nil>), %!d(string=...), %!(EXTRA ...)), whatever
// value a setting has: each variable in turn with each kind of mistake.
func TestNoFormattingArtefacts(t *testing.T) {
	values := []string{"", " ", "x", "0", "-1", "1.5", "99999999999999999999", "yes", "soon", `"60s"`, "'k'", "60s\r",
		"export x", "a;b", "192.168.1.300", "192.168.1.0/24", "::1", "tcp://::1:1883", "tcp://host:1883/mqtt",
		"http://a:b@host/x?y#z", "ftp://host", "wss://", "/nonexistent/file", "relative/dir", "+/#", "a//b",
		strings.Repeat("long", 80), "%s %d %v"}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	values = append(values, file)
	n := 0
	for _, v := range config.Vars() {
		for _, value := range values {
			env := map[string]string{"CLOUD_BASE_URL": "https://cloud.example", "CLOUD_API_KEY": "k-31337", v.Name: value,
				"POLL_INTERVALL": "1m", "HTTP_ADDR": "0.0.0.0:8080"}
			cfg, err := config.Load(env)
			for _, p := range app.Problems(cfg, err) {
				n++
				if strings.Contains(p.Text, "%!") {
					t.Errorf("%s=%q: %s %q", v.Name, value, p.Level, p.Text)
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d problems tried", n)
	}
}
