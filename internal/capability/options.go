package capability

// A definition as a value meets it: the part a value is checked against
// (valueSpec, for the capability or one struct member), struct members and
// options found by what a person calls them, and the option lists with a
// meaning of their own: on/off, temperature units, a work mode's dependent
// options.

import "strings"

// Bounds that hold whatever a definition says (spec, "Limits" rule 3).
const (
	maxColor       = 16777215
	maxSensitivity = 100
)

// valueSpec is the part of a definition a value is checked against: a capability's
// parameters or one struct member.
type valueSpec struct {
	dataType    string
	options     []Option
	rng         *Range
	fields      []Field
	size        *Range
	elemRange   *Range
	elementType string
	def         any  // struct member default
	required    bool // struct member
	onOff       bool // on_off/toggle: 1 or 0 even when the options are missing
}

func paramSpec(c Capability) valueSpec {
	p := c.Parameters
	s := valueSpec{dataType: p.DataType, options: p.Options, rng: p.Range, fields: p.Fields}
	if s.rng == nil && c.Instance == InstanceColorRGB && s.dataType == DataInteger {
		s.rng = &Range{Min: 0, Max: maxColor, Precision: 1}
	}
	s.onOff = c.Type == TypeOnOff || c.Type == TypeToggle
	return s
}

func fieldSpec(f Field) valueSpec {
	s := valueSpec{
		dataType: f.DataType, options: f.Options, rng: f.Range, size: f.Size,
		elemRange: f.ElementRange, elementType: f.ElementType, def: f.DefaultValue, required: f.Required,
	}
	if s.rng == nil && s.dataType == DataInteger {
		switch f.FieldName {
		case "rgb":
			s.rng = &Range{Min: 0, Max: maxColor, Precision: 1}
		case "sensitivity":
			s.rng = &Range{Min: 0, Max: maxSensitivity, Precision: 1}
		}
	}
	return s
}

// fieldFor finds the member definition a sent key means.
func (s valueSpec) fieldFor(key string) (Field, bool) {
	for _, f := range s.fields {
		if f.FieldName == key {
			return f, true
		}
	}
	k := nameKey(key)
	for _, f := range s.fields {
		if nameKey(f.FieldName) == k {
			return f, true
		}
	}
	return Field{}, false
}

func memberPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// isDependent reports whether a struct member's options depend on another
// member: every option has a name and no value of its own.
func isDependent(f Field) bool {
	if len(f.Options) == 0 {
		return false
	}
	for _, o := range f.Options {
		if o.Value != nil || o.Name == "" {
			return false
		}
	}
	return true
}

// controller finds the member a dependent member's options are named after:
// an ENUM member with named values whose names include the dependent
// option names (in practice always workMode).
func controller(fields []Field, dep Field) (Field, bool) {
	best, bestHits := Field{}, 0
	for _, f := range fields {
		if f.FieldName == dep.FieldName || f.DataType != DataEnum || isDependent(f) {
			continue
		}
		hits := 0
		for _, d := range dep.Options {
			if _, ok := optionByName(f.Options, d.Name); ok {
				hits++
			}
		}
		if hits > bestHits || (hits == bestHits && hits > 0 && f.FieldName == InstanceWorkMode) {
			best, bestHits = f, hits
		}
	}
	return best, bestHits > 0
}

// chosenDependent returns the dependent option selected by the controlling
// member's current value in m, if it can be told.
func chosenDependent(fields []Field, dep Field, m map[string]any) (Option, string, bool) {
	ctl, ok := controller(fields, dep)
	if !ok {
		return Option{}, "", false
	}
	cv := canonicalNumber(m[ctl.FieldName])
	for _, o := range ctl.Options {
		if Equal(canonicalNumber(o.Value), cv) {
			d, ok := optionByName(dep.Options, o.Name)
			return d, o.Name, ok
		}
	}
	return Option{}, "", false
}

// primaryEnum finds the ENUM member a bare scalar means: the one with that
// name, else the first required ENUM member.
func primaryEnum(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.FieldName == name && f.DataType == DataEnum {
			return f, true
		}
	}
	for _, f := range fields {
		if f.Required && f.DataType == DataEnum && !isDependent(f) {
			return f, true
		}
	}
	return Field{}, false
}

// optionByName finds an option by name: exactly, else ignoring case,
// spaces, underscores and dashes.
func optionByName(opts []Option, name string) (Option, bool) {
	for _, o := range opts {
		if o.Name == name {
			return o, true
		}
	}
	key := nameKey(name)
	if key == "" {
		return Option{}, false
	}
	for _, o := range opts {
		if nameKey(o.Name) == key {
			return o, true
		}
	}
	return Option{}, false
}

// nameKey folds a name for friendly comparison: lower case, without spaces,
// underscores and dashes ("Night Light" == "night_light" == "NIGHT-LIGHT").
func nameKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch r {
		case ' ', '_', '-', '\t':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unitOption matches temperature units written short: "C", "°F", "celsius".
func unitOption(field string, opts []Option, str string) (Option, bool) {
	if field != "unit" && !strings.HasSuffix(field, ".unit") {
		return Option{}, false
	}
	key := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(str), "°"))
	if key != "c" && key != "f" {
		return Option{}, false
	}
	for _, o := range opts {
		name, _ := o.Value.(string)
		if name == "" {
			name = o.Name
		}
		if strings.HasPrefix(strings.ToLower(name), key) {
			return o, true
		}
	}
	return Option{}, false
}

var (
	onWords  = map[string]bool{"on": true, "true": true, "yes": true, "1": true}
	offWords = map[string]bool{"off": true, "false": true, "no": true, "0": true}
)

// onOffOptions reports whether an option list is exactly on=1 and off=0.
func onOffOptions(opts []Option) bool {
	if len(opts) != 2 {
		return false
	}
	seen := map[string]bool{}
	for _, o := range opts {
		n, res := asWholeInt(canonicalNumber(o.Value))
		if res != intOK {
			return false
		}
		name := strings.ToLower(strings.TrimSpace(o.Name))
		switch {
		case name == "on" && n == 1, name == "off" && n == 0:
			seen[name] = true
		default:
			return false
		}
	}
	return len(seen) == 2
}

// cloneValue deep-copies a normalised value so callers never share maps or
// slices with a definition.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
