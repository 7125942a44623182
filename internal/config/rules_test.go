package config

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/logging"
)

// TestSet: an option set at run time is read by its setting's kind, and a
// value that does not read names the variable, says what to send, and
// leaves the configuration as it was.
func TestSet(t *testing.T) {
	c := mustLoad(t, valid())
	for _, tc := range []struct{ variable, value string }{
		{"POLL_INTERVAL", "90"}, {"CLOUD_DAILY_LIMIT", " 500 "}, {"LOG_LEVEL", " Warn "}, {"HA_DISCOVERY", "false"}, {"MQTT_CLIENT_ID", "x"},
	} {
		if err := c.Set(tc.variable, tc.value); err != nil {
			t.Errorf("Set(%s, %q): %v", tc.variable, tc.value, err)
		}
	}
	if c.Poll.Interval != 90*time.Second || c.Cloud.DailyLimit != 500 || c.Log.Level != "warn" || c.HA.Discovery || c.MQTT.ClientID != "x" {
		t.Errorf("not set: %v", c)
	}
	before := c
	for _, tc := range []struct{ variable, value, want string }{
		{"POLL_INTERVAL", "soon", `POLL_INTERVAL="soon" is not a duration: use ` + DurationHint},
		{"CLOUD_DAILY_LIMIT", "1.5", `CLOUD_DAILY_LIMIT="1.5" is not a whole number: send the most requests per day, or 0 for no daily limit`},
		{"LIMIT_CONTROL_BURST", "many", `LIMIT_CONTROL_BURST="many" is not a whole number`},
		{"HA_DISCOVERY", "maybe", `HA_DISCOVERY="maybe" is not true or false`},
		{"LOG_LEVEL", "loud", `LOG_LEVEL="loud" is not a level: use one of trace, debug, info, warn, error`},
		{"CLOUD_API_KEY", "k2", "CLOUD_API_KEY is a secret: it is not set at run time"},
		{"NO_SUCH", "1", "NO_SUCH is not a setting"},
	} {
		if err := c.Set(tc.variable, tc.value); err == nil || err.Error() != tc.want {
			t.Errorf("Set(%s, %q): %v, want %q", tc.variable, tc.value, err, tc.want)
		}
	}
	if !reflect.DeepEqual(c.Table(), before.Table()) {
		t.Errorf("a refused value changed the configuration:\n%v\nwas\n%v", c, before)
	}
	// The floor is Validate's, as for the environment.
	if err := c.Set("POLL_INTERVAL", "1s"); err != nil || c.Validate() == nil {
		t.Errorf("POLL_INTERVAL=1s: Set %v, Validate %v", err, c.Validate())
	}
}

// Every option can be set from its default, and shows as the environment
// spells it.
func TestEveryOptionSetsFromItsDefault(t *testing.T) {
	c := mustLoad(t, valid())
	for _, v := range Vars() {
		if v.Option == "" {
			continue
		}
		if v.Kind == KindSecret {
			t.Errorf("%s is a secret and an option", v.Name)
		}
		if err := c.Set(v.Name, v.Default); err != nil {
			t.Errorf("%s: its default %q: %v", v.Name, v.Default, err)
		}
		d, _ := ParseDuration(v.Default)
		if got := c.Value(v.Name); got != v.Default && got != FormatDuration(d) {
			t.Errorf("%s shows %q, its default is %q", v.Name, got, v.Default)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestCheckAs(t *testing.T) {
	if err := CheckAs("POLL_INTERVAL", "poll_interval", time.Second); err == nil ||
		err.Error() != "poll_interval=1s is below the 2s floor (the cloud allows 30 state reads per minute per device)" {
		t.Errorf("1s: %v", err)
	}
	if err := CheckAs("POLL_INTERVAL", "poll_interval", 2*time.Second); err != nil {
		t.Errorf("2s: %v", err)
	}
	if err := CheckAs("NO_SUCH", "x", 1); err == nil {
		t.Error("a setting that is none")
	}
}

// The words LOG_LEVEL and LOG_FORMAT may be are logging's: it reads every
// one of them, and nothing close.
func TestChoicesAreLoggings(t *testing.T) {
	levels, _ := lookup(Config{}, "LOG_LEVEL")
	if !reflect.DeepEqual(levels.rule.choices, logging.Levels()) {
		t.Errorf("LOG_LEVEL's choices %v, logging's levels %v", levels.rule.choices, logging.Levels())
	}
	formats, _ := lookup(Config{}, "LOG_FORMAT")
	for _, f := range formats.rule.choices {
		if _, err := logging.ParseFormat(f); err != nil {
			t.Errorf("LOG_FORMAT choice %q: %v", f, err)
		}
	}
	for _, f := range []string{"text", "logfmt", "syslog", "pretty"} {
		if _, err := logging.ParseFormat(f); err == nil {
			t.Errorf("logging reads LOG_FORMAT=%s, which is not among the choices %v", f, formats.rule.choices)
		}
	}
}

// Every min reads as its setting's kind, the app's schema of a whole
// number shows it, and a tag that does not read fails at once.
func TestRuleTags(t *testing.T) {
	for _, f := range walk(Config{}) {
		if f.v.Kind == KindNumber && f.rule.min != nil && !strings.HasPrefix(f.v.App, "int("+strconv.Itoa(f.rule.min.(int))+",)") {
			t.Errorf("%s: min %v, app schema %q", f.v.Name, f.rule.min, f.v.App)
		}
	}
	for _, bad := range []any{
		struct {
			X int `env:"X" min:"a" invalid:"is bad"`
		}{},
		struct {
			X string `env:"X" min:"1" invalid:"is bad"`
		}{},
		struct {
			X time.Duration `env:"X" min:"1s"`
		}{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%T: no panic", bad)
				}
			}()
			walk(bad)
		}()
	}
}

// config imports no other package of the bridge's: LAN_LISTEN and
// LAN_SCAN_TARGETS are text here, which lan parses (app.Validate, and where
// the LAN client is built), and LOG_LEVEL's and LOG_FORMAT's words are
// choice tags (TestChoicesAreLoggings).
func TestImportsNoOtherPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "cloud2mqtt/") {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
