package main

import (
	"strings"
	"testing"
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
