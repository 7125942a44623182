package capability

// Validate: a value in normalised form checked against a definition as the
// cloud would check it, scalars, structs (with members whose options depend
// on another member) and arrays.

import (
	"fmt"
	"sort"
	"strings"
)

// Validate checks a value in normalised form (see Normalize) against the
// capability's definition, the way the cloud would, and returns a
// *ValueError naming the spec's category when it does not fit. Capabilities
// of unknown types are checked by their parameters' dataType; read-only
// capabilities (online, property, event, no parameters) refuse every value
// with CategoryUnknown.
func Validate(c Capability, v any) error {
	if !c.Controllable() {
		return readOnlyError(c)
	}
	v = NormalizeValue(v)
	if err := (valueChecker{c.Instance}).value("", paramSpec(c), v); err != nil {
		return err
	}
	return nil
}

// value checks v against s; field is the member path for messages.
func (ck valueChecker) value(field string, s valueSpec, v any) *ValueError {
	if v == nil {
		return ck.fail(CategoryMissing, field, "no value; %s", ck.accepts(s))
	}
	if str, ok := v.(string); ok && str == "" {
		return ck.fail(CategoryEmpty, field, "empty value; %s", ck.accepts(s))
	}
	switch s.dataType {
	case DataEnum:
		return ck.enum(field, s, v)
	case DataInteger:
		return ck.integer(field, s.rng, v)
	case DataStruct:
		return ck.structure(field, s, v)
	case DataArray:
		return ck.array(field, s, v)
	}
	// A data type the spec does not name: the cloud decides.
	return nil
}

// integer checks an INTEGER value against an optional range and its step
// (precision): value-min must be a multiple of the step.
func (ck valueChecker) integer(field string, r *Range, v any) *ValueError {
	n, res := asWholeInt(v)
	switch res {
	case intNotNumber:
		return ck.fail(CategoryType, field, "expected an integer, got %s %s", valueKind(v), showValue(v))
	case intFraction:
		return ck.fail(CategoryType, field, "expected an integer, got %s which is not a whole number", showValue(v))
	case intTooLarge:
		return ck.fail(CategoryRange, field, "%s is too large for an integer", showValue(v))
	}
	return ck.inRange(field, "", r, n)
}

func (ck valueChecker) inRange(field, what string, r *Range, n int64) *ValueError {
	if r == nil {
		return nil
	}
	if n < int64(r.Min) {
		return ck.fail(CategoryRange, field, "%s%d is below the minimum %d", what, n, r.Min)
	}
	if n > int64(r.Max) {
		return ck.fail(CategoryRange, field, "%s%d is above the maximum %d", what, n, r.Max)
	}
	if step := int64(r.Step()); step > 1 && (n-int64(r.Min))%step != 0 {
		return ck.fail(CategoryRange, field, "%s%d is not on the step %d counted from %d", what, n, step, r.Min)
	}
	return nil
}

// enum checks that v is one of the option values. An option list that is
// empty (dynamic scenes before the scene endpoint filled it) accepts any
// integer or {paramId,id} object; on_off and toggle accept 1 or 0 then.
func (ck valueChecker) enum(field string, s valueSpec, v any) *ValueError {
	v = canonicalNumber(v)
	if len(s.options) == 0 {
		if s.onOff {
			if n, res := asWholeInt(v); res == intOK && (n == 0 || n == 1) {
				return nil
			}
			if _, res := asWholeInt(v); res == intNotNumber {
				return ck.fail(CategoryType, field, "expected 1 (on) or 0 (off), got %s %s", valueKind(v), showValue(v))
			}
			return ck.fail(CategoryRange, field, "%s is not 1 (on) or 0 (off)", showValue(v))
		}
		if _, res := asWholeInt(v); res == intOK {
			return nil
		}
		if isSceneObject(v) {
			return nil
		}
		return ck.fail(CategoryType, field, "expected an option value (an integer or a {paramId,id} object), got %s %s", valueKind(v), showValue(v))
	}
	if _, res := asWholeInt(v); res == intFraction {
		return ck.fail(CategoryType, field, "expected one of %s, got %s which is not a whole number", describeOptions(s.options), showValue(v))
	}
	sameKind := false
	for _, o := range s.options {
		if Equal(canonicalNumber(o.Value), v) {
			return nil
		}
		if sameJSONKind(o.Value, v) {
			sameKind = true
		}
	}
	if !sameKind {
		return ck.fail(CategoryType, field, "expected one of %s, got %s %s", describeOptions(s.options), valueKind(v), showValue(v))
	}
	return ck.fail(CategoryRange, field, "%s is not one of the options %s", showValue(v), describeOptions(s.options))
}

func sameJSONKind(a, b any) bool {
	_, an := asWholeInt(canonicalNumber(a))
	_, bn := asWholeInt(canonicalNumber(b))
	if an != intNotNumber && bn != intNotNumber {
		return true
	}
	return valueKind(a) == valueKind(b)
}

// isSceneObject reports whether v is a dynamic scene value {paramId, id}.
func isSceneObject(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 {
		return false
	}
	_, r1 := asWholeInt(m["paramId"])
	_, r2 := asWholeInt(m["id"])
	return r1 == intOK && r2 == intOK
}

// structure checks a STRUCT value: an object, no unknown members, every
// required member without a default present, each member by its definition.
// Members whose options depend on another member (work mode's modeValue) are
// checked against the option chosen there.
func (ck valueChecker) structure(field string, s valueSpec, v any) *ValueError {
	m, ok := v.(map[string]any)
	if !ok {
		return ck.fail(CategoryType, field, "expected an object with members %s, got %s %s",
			strings.Join(fieldNames(s.fields), ", "), valueKind(v), showValue(v))
	}
	known := make(map[string]bool, len(s.fields))
	for _, f := range s.fields {
		known[f.FieldName] = true
	}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return ck.fail(CategoryFormat, memberPath(field, unknown[0]), "unknown member %q; allowed members are %s",
			unknown[0], strings.Join(fieldNames(s.fields), ", "))
	}
	// Independent members first, so a dependent member is checked against a
	// valid choice.
	for _, f := range s.fields {
		if isDependent(f) {
			continue
		}
		path := memberPath(field, f.FieldName)
		mv, present := m[f.FieldName]
		if !present {
			if f.Required && f.DefaultValue == nil {
				return ck.fail(CategoryMissing, path, "required member %s is missing; %s", f.FieldName, ck.accepts(fieldSpec(f)))
			}
			continue
		}
		if mv == nil {
			return ck.fail(CategoryEmpty, path, "member %s is null; omit it or %s", f.FieldName, ck.accepts(fieldSpec(f)))
		}
		if err := ck.value(path, fieldSpec(f), mv); err != nil {
			return err
		}
	}
	for _, f := range s.fields {
		if !isDependent(f) {
			continue
		}
		if err := ck.dependent(field, s.fields, f, m); err != nil {
			return err
		}
	}
	return nil
}

// dependent checks a member whose options depend on the chosen option of
// another member: nested options (one of them), a defaultValue (only that
// value, or omitted) or a range.
func (ck valueChecker) dependent(field string, fields []Field, f Field, m map[string]any) *ValueError {
	path := memberPath(field, f.FieldName)
	mv, present := m[f.FieldName]
	if present && mv == nil {
		return ck.fail(CategoryEmpty, path, "member %s is null; omit it or send an integer", f.FieldName)
	}
	d, mode, ok := chosenDependent(fields, f, m)
	if !ok {
		// The definition does not say what this choice takes: any integer.
		if !present {
			if f.Required {
				return ck.fail(CategoryMissing, path, "required member %s is missing; send an integer", f.FieldName)
			}
			return nil
		}
		return ck.integer(path, nil, mv)
	}
	if !present {
		required := f.Required
		if d.Required != nil {
			required = *d.Required
		}
		if required && d.DefaultValue == nil && f.DefaultValue == nil {
			return ck.fail(CategoryMissing, path, "required member %s is missing; for mode %s %s",
				f.FieldName, mode, describeDependent(d))
		}
		return nil
	}
	switch {
	case len(d.Options) > 0:
		if err := ck.enum(path, valueSpec{dataType: DataEnum, options: d.Options}, mv); err != nil {
			err.Msg += " (mode " + mode + ")"
			return err
		}
		return nil
	case d.DefaultValue != nil:
		if Equal(canonicalNumber(mv), canonicalNumber(d.DefaultValue)) {
			return nil
		}
		if _, res := asWholeInt(canonicalNumber(mv)); res != intOK && valueKind(mv) != valueKind(d.DefaultValue) {
			return ck.fail(CategoryType, path, "expected %s for mode %s, got %s %s", showValue(d.DefaultValue), mode, valueKind(mv), showValue(mv))
		}
		return ck.fail(CategoryRange, path, "mode %s takes only %s %s (or omit it), got %s",
			mode, f.FieldName, showValue(d.DefaultValue), showValue(mv))
	default:
		if err := ck.integer(path, d.Range, mv); err != nil {
			err.Msg += " (mode " + mode + ")"
			return err
		}
		return nil
	}
}

// array checks an Array member: a non-empty list within size, of distinct
// integers in elementRange or among the option values.
func (ck valueChecker) array(field string, s valueSpec, v any) *ValueError {
	list, ok := v.([]any)
	if !ok {
		return ck.fail(CategoryType, field, "expected a list of %s, got %s %s", describeElements(s), valueKind(v), showValue(v))
	}
	if len(list) == 0 {
		return ck.fail(CategoryEmpty, field, "empty list; send a list of %s", describeElements(s))
	}
	if s.size != nil && (len(list) < s.size.Min || len(list) > s.size.Max) {
		return ck.fail(CategoryLength, field, "%d elements, allowed are %d to %d", len(list), s.size.Min, s.size.Max)
	}
	intElems := s.elementType == "" || strings.EqualFold(s.elementType, DataInteger)
	for i, e := range list {
		what := fmt.Sprintf("element %d: ", i)
		if e == nil {
			return ck.fail(CategoryEmpty, field, "%snull; send a list of %s", what, describeElements(s))
		}
		if intElems {
			n, res := asWholeInt(e)
			switch res {
			case intNotNumber, intFraction:
				return ck.fail(CategoryType, field, "%sexpected an integer, got %s %s", what, valueKind(e), showValue(e))
			case intTooLarge:
				return ck.fail(CategoryRange, field, "%s%s is too large", what, showValue(e))
			}
			if err := ck.inRange(field, what, s.elemRange, n); err != nil {
				return err
			}
		}
		if s.elemRange == nil && len(s.options) > 0 {
			found := false
			for _, o := range s.options {
				if Equal(canonicalNumber(o.Value), canonicalNumber(e)) {
					found = true
					break
				}
			}
			if !found {
				return ck.fail(CategoryRange, field, "%s%s is not one of %s", what, showValue(e), describeOptions(s.options))
			}
		}
		for j := range i {
			if Equal(canonicalNumber(list[j]), canonicalNumber(e)) {
				return ck.fail(CategoryDuplicate, field, "%s appears more than once", showValue(e))
			}
		}
	}
	return nil
}
