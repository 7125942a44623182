package config

import (
	"reflect"
	"strings"
)

// Var is one environment variable of the daemon, read from Config's tags.
type Var struct {
	Name    string // the variable, e.g. POLL_INTERVAL
	Default string // envDefault, "" when none
	Doc     string // one line of meaning
	Group   string // the heading it is listed under in config.example.env
	Secret  bool   // its value is never printed
}

// Required are the settings without which the daemon does not start
// (outside -demo); a test holds Validate to them.
var Required = []string{"CLOUD_BASE_URL", "CLOUD_API_KEY"}

// Vars lists every variable in declaration order. It is derived from the
// struct tags, so the documentation cannot drift from the parser.
func Vars() []Var {
	fields := walk(Config{})
	out := make([]Var, len(fields))
	for i, f := range fields {
		out[i] = f.v
	}
	return out
}

// varNames are the variables' names in Vars order.
func varNames() []string {
	vars := Vars()
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name
	}
	return out
}

// field is one leaf setting of a Config (or of one group) with its value.
type field struct {
	v         Var
	goName    string
	value     reflect.Value
	redactURL bool
}

var secretType = reflect.TypeFor[Secret]()

// walk visits the leaf settings of a Config or of one of its groups in
// declaration order. Fields tagged env:"-" and unexported ones are skipped.
func walk(x any) []field {
	var out []field
	var visit func(v reflect.Value, group string)
	visit = func(v reflect.Value, group string) {
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("env"), ",")
			if name == "-" {
				continue
			}
			if name == "" && sf.Type.Kind() == reflect.Struct {
				visit(v.Field(i), sf.Tag.Get("group"))
				continue
			}
			if name == "" {
				continue
			}
			out = append(out, field{
				v: Var{
					Name:    name,
					Default: sf.Tag.Get("envDefault"),
					Doc:     sf.Tag.Get("doc"),
					Group:   group,
					Secret:  sf.Type == secretType,
				},
				goName:    sf.Name,
				value:     v.Field(i),
				redactURL: sf.Tag.Get("redact") == "url",
			})
		}
	}
	visit(reflect.ValueOf(x), "")
	return out
}

// fieldVars maps each Go field name to its variable, to name the variable in
// caarlos0/env's parse errors (which carry only the field name). Field names
// are unique across the groups; a test keeps them so.
func fieldVars() map[string]string {
	m := map[string]string{}
	for _, f := range walk(Config{}) {
		m[f.goName] = f.v.Name
	}
	return m
}

// ExampleEnv renders config.example.env: every variable, commented out with
// its default, under its group's heading, after its one line of meaning.
func ExampleEnv() []byte {
	var b strings.Builder
	b.WriteString(`# cloud2mqtt configuration: every environment variable, with its default.
#
# Generated from internal/config (go test ./internal/config -run TestExampleEnv -update);
# change the struct tags there, not this file.
#
# Uncomment a line to change a setting; an empty value means the default.
# Secrets (CLOUD_API_KEY, MQTT_PASSWORD, HTTP_TOKEN) may instead come from a file
# (*_FILE) or a systemd credential (LoadCredential=cloud_api_key:/etc/cloud2mqtt/api_key,
# LoadCredential=mqtt_password:..., LoadCredential=http_token:...), in that order of precedence after the
# variable itself; setting both a variable and its *_FILE is an error.
# With -demo, CLOUD_BASE_URL and CLOUD_API_KEY are not needed.
# Durations are seconds (60) or a number with a unit (60s, 1m, 6h): 60, 60s and
# 1m are the same, here and in the options set over MQTT.
# A variable that is not listed here but looks like one (POLL_INTERVALL) is a
# warning at start and fails -check, naming the setting meant. Save this file
# with Unix line endings: values ending in \r (Windows) are refused.
`)
	group := "\x00"
	for _, v := range Vars() {
		if v.Group != group {
			group = v.Group
			b.WriteString("\n# === " + group + " ===\n")
		}
		b.WriteString("\n# " + v.Doc + "\n")
		b.WriteString("#" + v.Name + "=" + v.Default + "\n")
	}
	return []byte(b.String())
}
