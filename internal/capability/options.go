package capability

// A definition as a value meets it: the part a value is checked against
// (valueSpec, for the capability or one struct member), and struct members
// and options found by what a person calls them.

import "strings"

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
	onOff       bool   // the type's (typeRules.onOff): 1 or 0 even when the options are missing
	unit        string // the range's unit as messages write it (unitSymbol): "%", "K", "°F"
	// unitMember's range is in memberUnit (typeRules.units): a struct's
	// temperature in the device's unit.
	unitMember, memberUnit string
}

func paramSpec(c Capability) valueSpec {
	p := c.Parameters
	s := valueSpec{dataType: p.DataType, options: p.Options, rng: p.Range, fields: p.Fields, onOff: types[c.Type].onOff,
		unit: UnitSymbol(p.Unit)}
	switch {
	case s.dataType == DataStruct:
		if r := structRules(c); r.units != nil {
			s.unitMember, s.memberUnit = r.units(s.fields)
		}
	case s.rng == nil && c.Instance == InstanceColorRGB && s.dataType == DataInteger:
		s.rng = &Range{Min: 0, Max: maxColor, Precision: 1}
	case s.unit == "" && c.Instance == InstanceColorTemperatureK:
		s.unit = "K" // the spec: colorTemperatureK is in kelvin
	}
	return s
}

// member is the spec of one of s's struct members.
func (s valueSpec) member(f Field) valueSpec {
	m := fieldSpec(f)
	if f.FieldName == s.unitMember && s.memberUnit != "" {
		m.unit = s.memberUnit
	}
	return m
}

func fieldSpec(f Field) valueSpec {
	s := valueSpec{dataType: f.DataType, options: f.Options, rng: f.Range, size: f.Size,
		elemRange: f.ElementRange, elementType: f.ElementType, unit: UnitSymbol(f.Unit)}
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

// memberScalar reads a scalar sent for a struct as its ENUM member name
// (primaryEnum): "Manual" for a work mode is {"workMode":"Manual"}.
func memberScalar(name string) func(valueChecker, []Field, any) (any, error) {
	return func(_ valueChecker, fields []Field, v any) (any, error) {
		if f, ok := primaryEnum(fields, name); ok {
			return map[string]any{f.FieldName: v}, nil
		}
		return v, nil
	}
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
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(" _-\t", r) {
			return -1
		}
		return r
	}, strings.ToLower(s))
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
