package config

import (
	"strings"
	"testing"
)

// TestClosest: the names a newcomer gets wrong find the setting they meant;
// names that are not near any setting find none.
func TestClosest(t *testing.T) {
	known := varNames()
	for name, want := range map[string]string{
		"POLL_INTERVALL":   "POLL_INTERVAL",
		"CLOUD_APIKEY":     "CLOUD_API_KEY",
		"MQTT_USER":        "MQTT_USERNAME",
		"LOGLEVEL":         "LOG_LEVEL",
		"HTTP_ADRESS":      "HTTP_ADDR",
		"HTTP_ADDRESS":     "HTTP_ADDR",
		"MQTT_PASS":        "MQTT_PASSWORD",
		"poll_interval":    "POLL_INTERVAL",
		"MQTT-URL":         "MQTT_URL",
		"CLOUD_BASEURL":    "CLOUD_BASE_URL",
		"SCENE_INTERAVL":   "SCENE_INTERVAL",
		"STATE_DIRECTORY":  "STATE_DIR", // Closest alone; UnknownVars leaves systemd's variable alone
		"LAN_ENABLE":       "LAN_ENABLED",
		"HA_DISCOVERY_PRE": "HA_DISCOVERY_PREFIX",
	} {
		got, ok := Closest(name, known)
		if !ok || got != want {
			t.Errorf("Closest(%s) = %q, %v; want %s", name, got, ok, want)
		}
	}
	for _, name := range []string{"PATH", "HOME", "HOSTNAME", "TERM", "LANG", "USER", "SHELL", "MQTT_QOS", "", strings.Repeat("A", 300)} {
		if got, ok := Closest(name, known); ok {
			t.Errorf("Closest(%q) suggests %s", name, got)
		}
	}
	// Options over MQTT are lower case and compared as such.
	opts := []string{"daily_limit", "device_list_interval", "log_level", "poll_interval", "scene_interval"}
	for name, want := range map[string]string{"pol_interval": "poll_interval", "loglevel": "log_level", "daily_limt": "daily_limit", "POLL_INTERVAL": "poll_interval"} {
		if got, ok := Closest(name, opts); !ok || got != want {
			t.Errorf("Closest(%s, options) = %q, %v; want %s", name, got, ok, want)
		}
	}
}

// TestUnknownVars: a variable with one of the settings' prefixes that is
// no setting, or one within two edits of a setting, is reported with the
// setting meant; the variables of the system, systemd, the Supervisor, Go
// and the proxies are not.
func TestUnknownVars(t *testing.T) {
	cases := map[string]string{
		"POLL_INTERVALL": "POLL_INTERVALL is not a setting of cloud2mqtt and is ignored: did you mean POLL_INTERVAL?",
		"CLOUD_APIKEY":   "CLOUD_APIKEY is not a setting of cloud2mqtt and is ignored: did you mean CLOUD_API_KEY?",
		"MQTT_USER":      "did you mean MQTT_USERNAME?",
		"LOGLEVEL":       "LOGLEVEL is not a setting of cloud2mqtt and is ignored: did you mean LOG_LEVEL?",
		"HTTP_ADRESS":    "did you mean HTTP_ADDR?",
		"log_level":      "variable names are upper case: did you mean LOG_LEVEL?",
		"MQTT_HOST":      "did you mean MQTT_URL? (the host and port go in the URL, like tcp://192.168.1.10:1883)",
		"MQTT_QOS":       "MQTT_QOS is not a setting of cloud2mqtt and is ignored: the settings starting with MQTT_ are MQTT_URL, MQTT_LISTEN, MQTT_USERNAME",
		"DEVICE_FILTER":  "the settings starting with DEVICE_ are DEVICE_LIST_INTERVAL (config.example.env",
	}
	environ := valid()
	for name := range cases {
		environ[name] = "secret-value-42"
	}
	quiet := []string{"PATH", "HOME", "HOSTNAME", "TERM", "LANG", "LANGUAGE", "LC_ALL", "USER", "LOGNAME", "SHELL",
		"PWD", "OLDPWD", "SHLVL", "TZ", "MAIL", "EDITOR", "DISPLAY", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "LS_COLORS",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"GOGC", "GOMAXPROCS", "GOMEMLIMIT", "GODEBUG", "GOTRACEBACK", "GOFLAGS", "GOPATH",
		"SUPERVISOR_TOKEN", "SUPERVISOR_API", "HASSIO_TOKEN", "ADDON_OPTIONS_FILE", "ADDON_SLUG",
		"JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "STATE_DIRECTORY",
		"CREDENTIALS_DIRECTORY", "LOGS_DIRECTORY", "RUNTIME_DIRECTORY", "CACHE_DIRECTORY", "SYSTEMD_EXEC_PID",
		"MANAGERPID", "LISTEN_FDS", "LISTEN_PID", "C2M_PPROF_ADDR", "C2M_MEMPROFILERATE", "CLOUD2MQTT_NODE_RED", "CLOUD_SDK_VERSION", "HA_ROOT", "HA_REV", "HA_CHECK_STATE", "container"}
	for _, name := range quiet {
		environ[name] = "/nonexistent/x"
	}
	cfg, err := Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range cfg.UnknownVars() {
		got[u.Name] = u.String()
	}
	for name, want := range cases {
		if !strings.Contains(got[name], want) {
			t.Errorf("%s: %q, want it to say %q", name, got[name], want)
		}
		if strings.Contains(got[name], "secret-value-42") {
			t.Errorf("%s: the message shows the value: %s", name, got[name])
		}
		delete(got, name)
	}
	for name, msg := range got {
		t.Errorf("%s reported, though it is no mistake: %s", name, msg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("unknown variables made the configuration invalid: %v", err)
	}
}

// TestUnknownVarNameClipped: a name of 300 characters is shown cut, with
// its length.
func TestUnknownVarNameClipped(t *testing.T) {
	name := "MQTT_" + strings.Repeat("X", 295)
	cfg := mustLoad(t, with(valid(), name, "v"))
	u := cfg.UnknownVars()
	if len(u) != 1 {
		t.Fatalf("%v", u)
	}
	msg := u[0].String()
	if strings.Contains(msg, strings.Repeat("X", 65)) || !strings.Contains(msg, "(300 characters)") {
		t.Errorf("the name is not cut: %s", msg)
	}
}

// TestRequired: an empty environment fails on exactly the Required
// settings (the help lists them as such).
func TestRequired(t *testing.T) {
	msg := loadErrors(map[string]string{}, false)
	lines := strings.Split(msg, "\n")
	if len(lines) != len(Required) {
		t.Errorf("%d problems, want one for each of %v:\n%s", len(lines), Required, msg)
	}
	for _, name := range Required {
		if !strings.Contains(msg, name+" is empty") {
			t.Errorf("an empty environment does not fail on %s:\n%s", name, msg)
		}
	}
	if msg := loadErrors(map[string]string{}, true); msg != "" {
		t.Errorf("-demo needs a setting: %s", msg)
	}
}
