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
		if f.rule.choices != nil && !slices.Contains(f.rule.choices, strings.ToLower(strings.TrimSpace(x))) {
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
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return f.notParsed(value, "true or false")
		}
		x = b
	case KindText:
		if f.rule.choices != nil {
			if err := f.check(variable, value); err != nil {
				return err
			}
			value = strings.ToLower(strings.TrimSpace(value))
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
