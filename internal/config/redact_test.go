package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const (
	testKey      = "KEY-s3cr3t-9f8e7d"
	testPassword = "PW-s3cr3t-7a6b5c"
	urlPassword  = "URLPW-s3cr3t-1a2b"
	testToken    = "TOKEN-s3cr3t-4d3c2b"
)

var allSecrets = []string{testKey, testPassword, urlPassword, testToken}

func assertNoSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range allSecrets {
		if strings.Contains(out, s) {
			t.Errorf("%s reveals a secret %q:\n%s", what, s, out)
		}
	}
}

// secretConfigs are configurations holding the secrets in every way they
// can arrive: variables, files, credentials, URL user info.
func secretConfigs(t *testing.T) map[string]Config {
	dir := t.TempDir()
	keyFile := writeTemp(t, dir, "key", testKey+"\n")
	pwFile := writeTemp(t, dir, "pw", testPassword+"\n")
	tokenFile := writeTemp(t, dir, "token", testToken+"\n")
	creds := filepath.Join(dir, "creds")
	mkdir(t, creds)
	writeTemp(t, creds, "cloud_api_key", testKey)
	writeTemp(t, creds, "mqtt_password", testPassword)
	writeTemp(t, creds, "http_token", testToken)

	out := map[string]Config{}
	for name, environ := range map[string]map[string]string{
		"variables": {"CLOUD_API_KEY": testKey, "MQTT_PASSWORD": testPassword, "MQTT_USERNAME": "u", "HTTP_TOKEN": testToken, "HTTP_ADDR": ":8080",
			"MQTT_URL": "tcp://u:" + urlPassword + "@broker:1883", "CLOUD_BASE_URL": "https://x:" + urlPassword + "@api.example.com"},
		"files":       {"CLOUD_API_KEY_FILE": keyFile, "MQTT_PASSWORD_FILE": pwFile, "HTTP_TOKEN_FILE": tokenFile, "MQTT_USERNAME": "u", "CLOUD_EVENTS_URL": "mqtts://u:" + urlPassword + "@events:8883"},
		"credentials": {"CREDENTIALS_DIRECTORY": creds, "MQTT_USERNAME": "u"},
		// Invalid in as many ways as possible, so Validate talks a lot.
		"invalid": {"CLOUD_API_KEY": testKey + " with space", "MQTT_PASSWORD": testPassword, "HTTP_TOKEN": testToken, "MQTT_URL": "http://u:" + urlPassword + "@broker",
			"CLOUD_BASE_URL": "ftp://u:" + urlPassword + "@h", "CLOUD_EVENTS_URL": "mqtts://u:" + urlPassword + "@%zz", "POLL_INTERVAL": "1s"},
	} {
		cfg, err := Load(environ)
		if err != nil {
			t.Fatalf("%s: Load: %v", name, err)
		}
		if name == "invalid" {
			if cfg.Validate() == nil {
				t.Fatal("the invalid config validated")
			}
		} else if !cfg.Cloud.APIKey.IsSet() || !cfg.MQTT.Password.IsSet() || !cfg.HTTP.Token.IsSet() {
			t.Fatalf("%s: secrets not loaded", name)
		}
		out[name] = cfg
	}
	return out
}

func TestRedaction(t *testing.T) {
	for name, cfg := range secretConfigs(t) {
		t.Run(name, func(t *testing.T) {
			// fmt, with every verb, on the config, a pointer to it, its
			// groups, the secrets themselves and a struct embedding it.
			type wrapper struct {
				Cfg  Config
				Ptr  *Config
				Keys []Secret
			}
			values := map[string]any{
				"Config": cfg, "*Config": &cfg, "Cloud": cfg.Cloud, "MQTT": cfg.MQTT, "HTTP": cfg.HTTP,
				"APIKey": cfg.Cloud.APIKey, "Password": cfg.MQTT.Password, "Token": cfg.HTTP.Token,
				"wrapper": wrapper{Cfg: cfg, Ptr: &cfg, Keys: []Secret{cfg.Cloud.APIKey}},
			}
			for vname, v := range values {
				for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%T %v", "%10.3v"} {
					assertNoSecret(t, fmt.Sprintf("fmt %s of %s", verb, vname), fmt.Sprintf(verb, v))
				}
				assertNoSecret(t, "fmt.Sprint of "+vname, fmt.Sprint(v)+fmt.Sprintln(v))
				b, err := json.Marshal(v)
				if err != nil {
					t.Errorf("json.Marshal(%s): %v", vname, err)
				}
				assertNoSecret(t, "JSON of "+vname, string(b))
			}

			// The methods meant for display.
			assertNoSecret(t, "String", cfg.String())
			assertNoSecret(t, "GoString", cfg.GoString())
			assertNoSecret(t, "Table", fmt.Sprint(cfg.Table()))
			if err := cfg.Validate(); err != nil {
				assertNoSecret(t, "Validate", err.Error())
			}

			// zerolog, as an object, embedded, and through reflection.
			var buf bytes.Buffer
			log := zerolog.New(&buf)
			log.Info().Object("config", cfg).Msg("start")
			log.Info().EmbedObject(cfg).Msg("start")
			log.Info().Interface("config", cfg).Stringer("s", cfg).Msg("start")
			log.Info().Any("cloud", cfg.Cloud).Any("mqtt", cfg.MQTT).Any("http", cfg.HTTP).Msg("start")
			assertNoSecret(t, "zerolog", buf.String())
		})
	}
}

// Redaction must not hide the rest: every setting is in the output, a set
// secret as *** and an unset one as "".
func TestRedactedOutputShowsEverySetting(t *testing.T) {
	cfg := mustLoad(t, with(valid(), "MQTT_URL", "tcp://user:"+urlPassword+"@broker:1883"))
	s := cfg.String()
	for _, v := range Vars() {
		if !strings.Contains(s, v.Name+"=") {
			t.Errorf("String lacks %s: %s", v.Name, s)
		}
	}
	for _, want := range []string{`CLOUD_API_KEY="*** (from CLOUD_API_KEY)"`, `MQTT_PASSWORD=""`, "POLL_INTERVAL=1m ", "MQTT_URL=tcp://user:xxxxx@broker:1883"} {
		if !strings.Contains(s, want) {
			t.Errorf("String lacks %q: %s", want, s)
		}
	}

	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().EmbedObject(cfg).Msg("")
	var fields map[string]any
	if err := json.Unmarshal(buf.Bytes(), &fields); err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars() {
		if _, ok := fields[v.Name]; !ok {
			t.Errorf("zerolog output lacks %s: %s", v.Name, buf.String())
		}
	}
	if fields["CLOUD_API_KEY"] != "*** (from CLOUD_API_KEY)" || fields["MQTT_PASSWORD"] != "" {
		t.Errorf("secrets shown as %q and %q", fields["CLOUD_API_KEY"], fields["MQTT_PASSWORD"])
	}

	cfg.Demo = true
	if !strings.Contains(cfg.String(), "demo=true") {
		t.Errorf("String does not say demo: %s", cfg.String())
	}
	if got := fmt.Sprint(Secret("")) + "|" + fmt.Sprint(Secret("x")); got != "|***" {
		t.Errorf("Secret prints %q, want |***", got)
	}
}
