package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Var is one environment variable of the daemon, read from Config's tags.
type Var struct {
	Name    string // the variable, e.g. POLL_INTERVAL
	Default string // envDefault, "" when none
	Doc     string // one line of meaning
	Group   string // the heading it is listed under in config.example.env
	Secret  bool   // its value is never printed
	Kind    Kind   // what its value is
	// Option is its name as an option changed at run time over MQTT
	// (bridge/request/options, internal/settings); "" when it is not one.
	Option string
	// App is its type in the Home Assistant app's schema (config.yaml),
	// ending in ? when the app's form shows it only on request; "" when
	// the app has no option for it.
	App string
}

// Kind is what a setting's value is: how an option reads it (Set) and how
// the app's schema and the options' JSON show it.
type Kind int

// The kinds of value, from the field's Go type.
const (
	KindText     Kind = iota // string
	KindSecret               // Secret
	KindDuration             // time.Duration, read by ParseDuration
	KindNumber               // int, a whole number
	KindBool                 // bool
)

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
	value     reflect.Value // settable when walk was given a pointer
	redactURL bool
	rule      rule
}

// rule is what a field's min, choice and invalid tags ask of its value
// (rules.go), and what its option tag says to send instead of a value that
// does not parse.
type rule struct {
	min     any      // the least value: a time.Duration or an int; nil for none
	choices []string // the words it may be, in lower case
	// aliases are other words taken as one of choices (warning: warn),
	// from the alias tag (word=choice,...).
	aliases    map[string]string
	invalid    string // the error after NAME=value when it breaks the rule
	optionHint string
}

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
)

// walk visits the leaf settings of a Config or one of its groups in
// declaration order, skipping env:"-" and unexported fields. A bad tag is a
// mistake in this source, so it panics and every test fails.
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
			f, err := leaf(sf, name, group)
			if err != nil {
				panic(fmt.Sprintf("config: the tags of %s: %v", name, err))
			}
			f.value = v.Field(i)
			out = append(out, f)
		}
	}
	visit(reflect.Indirect(reflect.ValueOf(x)), "")
	return out
}

// leaf reads one setting's tags.
func leaf(sf reflect.StructField, name, group string) (field, error) {
	kind := kindOf(sf.Type)
	option, hint, _ := strings.Cut(sf.Tag.Get("option"), ",")
	r := rule{invalid: sf.Tag.Get("invalid"), optionHint: hint}
	if c := sf.Tag.Get("choice"); c != "" {
		r.choices = strings.Split(c, ",")
	}
	if a := sf.Tag.Get("alias"); a != "" {
		r.aliases = map[string]string{}
		for _, pair := range strings.Split(a, ",") {
			word, to, ok := strings.Cut(pair, "=")
			if !ok || !slices.Contains(r.choices, to) {
				return field{}, fmt.Errorf("alias %q is not word=choice", pair)
			}
			r.aliases[word] = to
		}
	}
	if m := sf.Tag.Get("min"); m != "" {
		var err error
		switch kind {
		case KindDuration:
			r.min, err = ParseDuration(m)
		case KindNumber:
			r.min, err = strconv.Atoi(m)
		default:
			err = fmt.Errorf("min %q on a value that is not a number", m)
		}
		if err != nil {
			return field{}, fmt.Errorf("min %q: %w", m, err)
		}
	}
	if (r.min != nil || r.choices != nil) != (r.invalid != "") {
		return field{}, fmt.Errorf("min or choice without invalid, or invalid without either")
	}
	return field{
		v: Var{
			Name:    name,
			Default: sf.Tag.Get("envDefault"),
			Doc:     sf.Tag.Get("doc"),
			Group:   group,
			Secret:  kind == KindSecret,
			Kind:    kind,
			Option:  option,
			App:     appSchema(sf.Tag.Get("app"), kind, r),
		},
		goName:    sf.Name,
		redactURL: sf.Tag.Get("redact") == "url",
		rule:      r,
	}, nil
}

func kindOf(t reflect.Type) Kind {
	switch {
	case t == secretType:
		return KindSecret
	case t == durationType:
		return KindDuration
	case t.Kind() == reflect.Int:
		return KindNumber
	case t.Kind() == reflect.Bool:
		return KindBool
	}
	return KindText
}

// appDuration is the app's schema of a duration, which the Supervisor
// checks before the bridge reads it: seconds (60) or a number with a unit
// (60s, 1h30m), as ParseDuration reads them.
const appDuration = `match(^[0-9]+(\.[0-9]+)?((ms|s|m|h)([0-9]+(\.[0-9]+)?(ms|s|m|h))*)?$)`

// appSchema is a setting's type in the app's schema, from its app tag or
// else from its kind and rule.
func appSchema(tag string, kind Kind, r rule) string {
	schema, flag, _ := strings.Cut(tag, ",")
	if schema == "-" {
		return ""
	}
	if schema == "" {
		switch kind {
		case KindSecret:
			schema = "password"
		case KindDuration:
			schema = appDuration
		case KindNumber:
			schema = "int"
			if r.min != nil {
				schema = fmt.Sprintf("int(%d,)", r.min)
			}
		case KindBool:
			schema = "bool"
		default:
			schema = "str"
			if r.choices != nil {
				schema = "list(" + strings.Join(r.choices, "|") + ")"
			}
		}
	}
	if flag != "shown" {
		schema += "?"
	}
	return schema
}

// fieldVars maps each Go field name to its variable, because caarlos0/env's
// parse errors name only the field. A test keeps field names unique.
func fieldVars() map[string]string {
	m := map[string]string{}
	for _, f := range walk(Config{}) {
		m[f.goName] = f.v.Name
	}
	return m
}

// lookup is the setting variable of c (a Config, or a pointer to one to set
// it).
func lookup(c any, variable string) (field, bool) {
	for _, f := range walk(c) {
		if f.v.Name == variable {
			return f, true
		}
	}
	return field{}, false
}
