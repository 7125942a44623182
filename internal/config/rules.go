package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The rules a tag can say (a floor, a choice among words) are checked here,
// for the environment (Validate), for an option set at run time (Set) and
// for a setting of one device held to the bridge's rule (CheckAs).

// check holds v to the rule of f's tags, the error naming the setting as
// name: below its min, or none of its choices (in any case, blanks around
// ignored, as logging reads LOG_LEVEL).
func (f field) check(name string, v any) error {
	shown := ""
	switch x := v.(type) {
	case time.Duration:
		if least, ok := f.rule.min.(time.Duration); ok && x < least {
			shown = FormatDuration(x)
		}
	case int:
		if least, ok := f.rule.min.(int); ok && x < least {
			shown = strconv.Itoa(x)
		}
	case string:
		if f.rule.choices != nil && !slices.Contains(f.rule.choices, f.choice(x)) {
			shown = Quote(x)
		}
	}
	if shown == "" {
		return nil
	}
	return fmt.Errorf("%s=%s %s", name, shown, f.rule.invalid)
}

// tags reports every setting that breaks the rule of its tags.
func (v *validator) tags(c Config) {
	for _, f := range walk(c) {
		if err := f.check(f.v.Name, f.value.Interface()); err != nil {
			v.add(f.v.Name, err.Error())
		}
	}
}

// CheckAs holds value to the rule of the setting variable's tags, naming
// the setting name in the error: a device's own poll_interval is held to
// POLL_INTERVAL's floor.
func CheckAs(variable, name string, value any) error {
	f, ok := lookup(Config{}, variable)
	if !ok {
		return fmt.Errorf("%s is not a setting", variable)
	}
	return f.check(name, value)
}

// Value is the setting variable's value as the environment spells it (a
// duration as FormatDuration writes it, a secret redacted); "" for a name
// that is no setting.
func (c Config) Value(variable string) string {
	f, ok := lookup(c, variable)
	if !ok {
		return ""
	}
	return display(f)
}

// Set lays value over the setting variable as an option sent at run time is
// read: a duration by ParseDuration's rule, a whole number, true or false,
// one of its choices (kept in lower case), text as it is. The error names
// the variable and the fix, and c is then unchanged; the floors are
// Validate's, as for the environment.
func (c *Config) Set(variable, value string) error {
	f, ok := lookup(c, variable)
	if !ok {
		return fmt.Errorf("%s is not a setting", variable)
	}
	var x any
	switch f.v.Kind {
	case KindDuration:
		d, err := ParseDurationFor(variable, value)
		if err != nil {
			return err
		}
		x = d
	case KindNumber:
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return f.notParsed(value, "a whole number")
		}
		x = n
	case KindBool:
		b, err := ParseBool(value)
		if err != nil {
			return f.notParsed(value, boolHint)
		}
		x = b
	case KindText:
		if f.rule.choices != nil {
			if err := f.check(variable, value); err != nil {
				return err
			}
			value = f.choice(value)
		}
		x = value
	default:
		return fmt.Errorf("%s is a secret: it is not set at run time", variable)
	}
	f.value.Set(reflect.ValueOf(x).Convert(f.value.Type()))
	return nil
}

// notParsed is Set's error for a value that is not of the setting's kind,
// with what its option tag says to send instead.
func (f field) notParsed(value, want string) error {
	err := notA(f.v.Name, value, want)
	if f.rule.optionHint != "" {
		return fmt.Errorf("%w: %s", err, f.rule.optionHint)
	}
	return err
}

// notA is the one message for a value of the wrong kind:
// `CLOUD_DAILY_LIMIT="1.5" is not a whole number`.
func notA(name, value, want string) error {
	return fmt.Errorf("%s=%s is not %s", name, Quote(value), want)
}

// choice is value as one of f's choices would be written: lower case,
// without blanks around, an alias (LOG_LEVEL=warning) as the word it
// stands for.
func (f field) choice(value string) string {
	w := strings.ToLower(strings.TrimSpace(value))
	if to, ok := f.rule.aliases[w]; ok {
		return to
	}
	return w
}

// aliases writes each setting with an alias tag that holds an alias as the
// choice it stands for, so that what reads it later (logging's parser of
// LOG_LEVEL) sees only its choices.
func (c *Config) aliases() {
	for _, f := range walk(c) {
		if f.rule.aliases == nil {
			continue
		}
		if s := f.value.String(); f.choice(s) != strings.ToLower(strings.TrimSpace(s)) {
			f.value.SetString(f.choice(s))
		}
	}
}

// boolHint is what a boolean setting may be, for its error.
const boolHint = "true or false"

// ParseBool reads a boolean setting the one way the bridge reads every
// boolean, from the environment (caarlos0/env's parser, parseEnvBool) and
// from options (Set): strconv.ParseBool's words (true, 1, t, false, 0, f)
// and yes, on, no, off, in any case, blanks around ignored.
func ParseBool(s string) (bool, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "yes", "on":
		return true, nil
	case "no", "off":
		return false, nil
	}
	return strconv.ParseBool(strings.ToLower(s))
}

// parseEnvBool is the environment's parser of bool fields (caarlos0/env's
// FuncMap).
func parseEnvBool(v string) (any, error) {
	b, err := ParseBool(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}
