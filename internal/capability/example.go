package capability

// Values built from a definition: examples, defaults, and partial values
// laid over the last one.

import "maps"

// Example builds a valid value from a capability's definition, the same
// every time: an ENUM's first option, a range's minimum, a struct of the
// examples of its required and defaulted members, a list of the smallest
// allowed size. ok is false for read-only capabilities and for definitions
// that allow no value yet (an ENUM with no options, like dynamic scenes
// before the scene endpoint filled them). The simulator initialises device
// state with it.
func Example(c Capability) (any, bool) {
	if !c.Controllable() {
		return nil, false
	}
	s := paramSpec(c)
	if s.onOff && len(s.options) == 0 && s.dataType == DataEnum {
		return int64(0), true
	}
	v, ok := exampleFor(s)
	if !ok || Validate(c, v) != nil {
		return nil, false
	}
	return v, true
}

func exampleFor(s valueSpec) (any, bool) {
	switch s.dataType {
	case DataEnum:
		if len(s.options) == 0 {
			return nil, false
		}
		return cloneValue(canonicalNumber(s.options[0].Value)), s.options[0].Value != nil
	case DataInteger:
		if s.rng == nil {
			return int64(0), true
		}
		return int64(s.rng.Min), true
	case DataArray:
		return exampleArray(s)
	case DataStruct:
		m := map[string]any{}
		for _, f := range s.fields {
			if isDependent(f) {
				continue
			}
			switch {
			case f.DefaultValue != nil:
				m[f.FieldName] = cloneValue(f.DefaultValue)
			case f.Required:
				v, ok := exampleFor(fieldSpec(f))
				if !ok {
					return nil, false
				}
				m[f.FieldName] = v
			}
		}
		for _, f := range s.fields {
			if !isDependent(f) {
				continue
			}
			d, _, ok := chosenDependent(s.fields, f, m)
			if !ok {
				if f.Required {
					m[f.FieldName] = int64(0)
				}
				continue
			}
			required := f.Required
			if d.Required != nil {
				required = *d.Required
			}
			switch {
			case d.DefaultValue != nil:
				m[f.FieldName] = cloneValue(d.DefaultValue)
			case !required:
			case len(d.Options) > 0:
				m[f.FieldName] = cloneValue(canonicalNumber(d.Options[0].Value))
			case d.Range != nil:
				m[f.FieldName] = int64(d.Range.Min)
			default:
				m[f.FieldName] = int64(0)
			}
		}
		return m, true
	}
	return nil, false
}

func exampleArray(s valueSpec) (any, bool) {
	n := 1
	if s.size != nil && s.size.Min > 1 {
		n = s.size.Min
	}
	if n > maxSegmentExpand {
		return nil, false
	}
	out := make([]any, 0, n)
	switch {
	case s.elemRange != nil:
		for i := s.elemRange.Min; i <= s.elemRange.Max && len(out) < n; i++ {
			out = append(out, int64(i))
		}
	case len(s.options) > 0:
		for _, o := range s.options {
			if len(out) == n {
				break
			}
			out = append(out, cloneValue(canonicalNumber(o.Value)))
		}
	default:
		for i := range n {
			out = append(out, int64(i))
		}
	}
	if len(out) < n {
		return nil, false
	}
	return out, true
}

// WithDefaults returns v with the omitted (or null) struct members that have
// a default filled in: a member's defaultValue, modeValue from the chosen
// work mode's dependent defaultValue, and for temperature_setting a unit of
// Celsius and an autoStop of 0 when the definition has those members without
// a default. A null member with no default is dropped (as if omitted), so
// Validate then reports it missing if it is required. Anything that is not an object for a STRUCT definition is
// returned as it is. The input is never modified.
func WithDefaults(c Capability, v any) any {
	if c.Parameters == nil || c.Parameters.DataType != DataStruct {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	return withDefaults(c.Parameters.Fields, m, c.Type == TypeTemperature)
}

func withDefaults(fields []Field, m map[string]any, temperature bool) map[string]any {
	out := make(map[string]any, len(m)+len(fields))
	for k, e := range m {
		out[k] = e
	}
	missing := func(name string) bool { e, ok := out[name]; return !ok || e == nil }
	for _, f := range fields {
		if isDependent(f) {
			continue
		}
		if !missing(f.FieldName) {
			continue
		}
		switch {
		case f.DefaultValue != nil:
			out[f.FieldName] = cloneValue(f.DefaultValue)
		case temperature && f.FieldName == "unit":
			if o, ok := optionByName(f.Options, "Celsius"); ok && o.Value != nil {
				out[f.FieldName] = cloneValue(o.Value)
			} else if len(f.Options) == 0 {
				out[f.FieldName] = "Celsius"
			}
		case temperature && f.FieldName == "autoStop":
			out[f.FieldName] = int64(0)
		default:
			if _, present := out[f.FieldName]; present {
				delete(out, f.FieldName) // null and no default: as if omitted
			}
		}
	}
	for _, f := range fields {
		if !isDependent(f) || !missing(f.FieldName) {
			continue
		}
		if d, _, ok := chosenDependent(fields, f, out); ok && d.DefaultValue != nil {
			out[f.FieldName] = cloneValue(d.DefaultValue)
		} else if f.DefaultValue != nil {
			out[f.FieldName] = cloneValue(f.DefaultValue)
		} else if _, present := out[f.FieldName]; present {
			delete(out, f.FieldName)
		}
	}
	return out
}

// Overlay lays a partial struct value over the instance's last known one:
// members the partial value leaves out keep their current value, so
// {"sensitivity":80} keeps the music mode and colour already set. Anything
// that is not an object on both sides is returned unchanged; defaults and
// validation remain Decode's.
func Overlay(current, partial any) any {
	p, ok := partial.(map[string]any)
	if !ok {
		return partial
	}
	c, ok := current.(map[string]any)
	if !ok {
		return partial
	}
	out := maps.Clone(c)
	maps.Copy(out, p)
	return out
}
