package config

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// loadErrors is every message Load and Validate give for environ.
func loadErrors(environ map[string]string, demo bool) string {
	cfg, err := Load(environ)
	cfg.Demo = demo
	if err := errors.Join(err, cfg.Validate()); err != nil {
		return err.Error()
	}
	return ""
}

// TestCarriageReturnOneMessage: values from a file saved with Windows line
// endings end in \r. Every kind of setting (a URL, a secret, a duration, a
// number, a flag, a word, a path) gets the same one message, naming the
// line endings and the fix; none is blamed on its own, and none is taken
// with the \r.
func TestCarriageReturnOneMessage(t *testing.T) {
	environ := map[string]string{
		"CLOUD_BASE_URL": "https://api.example.com", "CLOUD_API_KEY": "k-123", "POLL_INTERVAL": "60s",
		"LIMIT_STATE_PER_MINUTE": "20", "HA_DISCOVERY": "false", "LOG_LEVEL": "debug", "MQTT_URL": "tcp://broker:1883",
		"MQTT_BASE_TOPIC": "home", "HTTP_ADDR": "127.0.0.1:8080", "STATE_DIR": "/var/lib/cloud2mqtt", "LAN_ENABLED": "true",
	}
	for k, v := range environ {
		environ[k] = v + "\r"
	}
	msg := loadErrors(environ, false)
	if strings.Count(msg, "\n") != 0 {
		t.Errorf("more than one message:\n%s", msg)
	}
	for _, want := range []string{"end in a carriage return (\\r)", "Windows line endings (CRLF)", "sed -i 's/\\r$//' FILE", "dos2unix", "/etc/cloud2mqtt/cloud2mqtt.env"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	for name := range environ {
		if !strings.Contains(msg, name) {
			t.Errorf("the message does not name %s:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "k-123") {
		t.Errorf("the message shows the key: %s", msg)
	}

	// One variable: one message in the singular, and the value is not
	// taken as valid (POLL_INTERVAL=$'60s\r' was silently accepted).
	cfg, err := Load(with(valid(), "POLL_INTERVAL", "60s\r"))
	if err == nil || err.Error() != "config: "+crError([]string{"POLL_INTERVAL"}).Error() || !strings.Contains(err.Error(), "POLL_INTERVAL ends in a carriage return") {
		t.Errorf("POLL_INTERVAL=60s\\r: %v", err)
	}
	if cfg.Poll.Interval != 60*time.Second || cfg.Validate() != nil {
		t.Errorf("the other checks blame the value too: %v, %v", cfg.Poll.Interval, cfg.Validate())
	}
}

// TestErrorsClipLongValues (issue 28): no configuration error shows more
// than 64 characters of a value, and each says how long the value was.
func TestErrorsClipLongValues(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, v := range Vars() {
		if v.Secret {
			continue
		}
		for _, value := range []string{long, "tcp://" + long + ":1883", "/" + long, long + ":1", "https://h/" + long + "/router/api/v1"} {
			msg := loadErrors(with(valid(), v.Name, value), false)
			if strings.Contains(msg, strings.Repeat("x", maxShown+1)) {
				t.Errorf("%s: more than %d characters of the value:\n%s", v.Name, maxShown, msg)
			}
			for _, line := range strings.Split(msg, "\n") {
				if strings.Contains(line, strings.Repeat("x", 20)) && !strings.Contains(line, "characters)") {
					t.Errorf("%s: a cut value without its length: %s", v.Name, line)
				}
			}
		}
	}
}

// TestErrorsNeverShowSecrets (issue 28): whatever is wrong with a secret,
// or with the variable naming its file, no error shows its value.
func TestErrorsNeverShowSecrets(t *testing.T) {
	bad := "hunter2 sekrit\x01value"
	for _, v := range Vars() {
		if !v.Secret {
			continue
		}
		for name, environ := range map[string]map[string]string{
			"bad value":          with(valid(), v.Name, bad),
			"value and file":     with(valid(), v.Name, bad, v.Name+"_FILE", "/etc/"+bad),
			"relative file":      with(valid(), v.Name+"_FILE", bad),
			"with a \\r":         with(valid(), v.Name, bad+"\r"),
			"without HTTP_ADDR":  with(valid(), v.Name, bad, "MQTT_USERNAME", ""),
			"file that is a key": with(valid(), v.Name+"_FILE", "/nonexistent/"+bad),
		} {
			msg := loadErrors(environ, false)
			if strings.Contains(msg, "sekrit") || strings.Contains(msg, "hunter2") {
				t.Errorf("%s, %s: an error shows the secret:\n%s", v.Name, name, msg)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"soon":                   `"soon"`,
		strings.Repeat("é", 64):  `"` + strings.Repeat("é", 64) + `"`,
		strings.Repeat("é", 65):  `"` + strings.Repeat("é", 64) + `"… (65 characters)`,
		strings.Repeat("a", 300): `"` + strings.Repeat("a", 64) + `"… (300 characters)`,
		"tab\there":              `"tab\there"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%.10q…) = %s, want %s", in, got, want)
		}
	}
	if got := Clip(strings.Repeat("b", 70)); got != strings.Repeat("b", 64)+"… (70 characters)" {
		t.Errorf("Clip = %s", got)
	}
}

// FuzzLoad: any variable with any value loads without panicking; no error
// and no unknown-variable message shows more than 64 characters of the
// value, and none shows a secret's value.
func FuzzLoad(f *testing.F) {
	f.Add("POLL_INTERVALL", "30s")
	f.Add("POLL_INTERVAL", "60s\r")
	f.Add("CLOUD_API_KEY", "a b")
	f.Add("MQTT_URL", "tcp://u:p@h:99999")
	f.Add("LOGLEVEL", "debug")
	f.Add("HTTP_ADDR", strings.Repeat("9", 100))
	f.Add("MQTT_CLIENT_ID", strings.Repeat("id", 200))
	f.Add("MQTT_QUEUED_COMMAND_MAX_AGE", "-1m")
	f.Add("CLOUD_API_KEY", `"k-123"`)
	f.Add("POLL_INTERVAL", `'60s'`)
	f.Add("export CLOUD_API_KEY", "k-123")
	f.Add("LAN_ENABLED", "On")
	f.Add("LOG_LEVEL", "warning")
	f.Fuzz(func(t *testing.T, name, value string) {
		if name == "" || strings.ContainsAny(name, "=\x00") || !utf8.ValidString(value) {
			return
		}
		environ := with(valid(), name, value)
		cfg, err := Load(environ)
		msg := ""
		if err := errors.Join(err, cfg.Validate()); err != nil {
			msg = err.Error()
		}
		for _, u := range cfg.UnknownVars() {
			msg += "\n" + u.String()
		}
		for _, w := range cfg.Warnings() {
			msg += "\n" + w
		}
		secret := name == "CLOUD_API_KEY" || name == "MQTT_PASSWORD" || name == "HTTP_TOKEN"
		if secret && len(strings.TrimSpace(value)) >= 4 && strings.Contains(msg, strings.TrimSpace(value)) {
			t.Errorf("%s: an error shows the secret: %s", name, msg)
		}
		if utf8.RuneCountInString(value) > 2*maxShown && !strings.ContainsAny(value, "\\\"") && strings.Contains(msg, value) {
			t.Errorf("%s: the whole value of %d characters in: %s", name, len(value), msg)
		}
	})
}
