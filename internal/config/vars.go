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
