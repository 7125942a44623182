package capability

// Values built from a definition: examples, defaults, and partial values
// laid over the last one.

import "maps"

// Example builds a valid value from a capability's definition, the same
// every time, such as an ENUM's first option or a range's minimum. ok is
// false for read-only capabilities and definitions that allow no value yet.
func Example(c Capability) (any, bool) {
	if !c.Controllable() {
		return nil, false
	}
	v, ok := exampleFor(paramSpec(c))
	if !ok || Validate(c, v) != nil {
		return nil, false
	}
	return v, true
}

func exampleFor(s valueSpec) (any, bool) {
	switch s.dataType {
	case DataEnum:
		if len(s.options) == 0 {
			return int64(0), s.onOff // on/off: off; else none until options are listed
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
		exampleDependents(s.fields, m)
		return m, true
	}
	return nil, false
}

// WithDefaults returns a copy of v with omitted or null struct members
// filled from their defaults, including a work mode's dependent default and
// a temperature's unit. A null member with no default is dropped, so
// Validate reports it if it is required.
func WithDefaults(c Capability, v any) any {
	if c.Parameters == nil || c.Parameters.DataType != DataStruct {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	return withDefaults(c.Parameters.Fields, m, types[c.Type].unset)
}

func withDefaults(fields []Field, m map[string]any, unset func([]Field, Field, map[string]any) bool) map[string]any {
	out := make(map[string]any, len(m)+len(fields))
	maps.Copy(out, m)
	for _, f := range fields {
		if e, ok := out[f.FieldName]; isDependent(f) || ok && e != nil {
			continue
		}
		switch {
		case unset != nil && unset(fields, f, out):
		case f.DefaultValue != nil:
			out[f.FieldName] = cloneValue(f.DefaultValue)
		default:
			delete(out, f.FieldName) // null and no default: as if omitted
		}
	}
	defaultDependents(fields, out)
	return out
}

// Overlay lays a partial struct value over the last known one, so
// {"sensitivity":80} keeps the music mode and colour already set. Anything
// that is not an object on both sides is returned unchanged.
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
