package capability

// Validate checks a value as the cloud would, by its data type; what a
// capability type adds is in its type_<name>.go.

import (
	"maps"
	"slices"
	"strings"
)

// Validate checks a normalised value against the capability's definition
// the way the cloud would and returns a *ValueError naming the spec's
// category when it does not fit. Read-only capabilities refuse every value.
// A temperature in another unit is converted to its range's unit first.
func Validate(c Capability, v any) error {
	if !c.Controllable() {
		return readOnlyError(c)
	}
	if _, err := check(c, NormalizeValue(v)); err != nil {
		return err
	}
	return nil
}

// check validates v (normalised) and returns it in the form the device
// takes (typeRules.toDevice): what Decode sends.
func check(c Capability, v any) (any, *ValueError) {
	ck := valueChecker{instance: c.Instance}
	s := paramSpec(c)
	if s.dataType == DataStruct {
		if r := structRules(c); r.toDevice != nil {
			v, ck.conv = r.toDevice(s.fields, v)
		}
	}
	if err := ck.value("", s, v); err != nil {
		return nil, err
	}
	return v, nil
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
		return ck.integer(field, s.rng, s.unit, v)
	case DataStruct:
		return ck.structure(field, s, v)
	case DataArray:
		return ck.array(field, s, v)
	}
	// A data type the spec does not name: the cloud decides.
	return nil
}

// integer checks an INTEGER value against an optional range and its step
// (precision): value-min must be a multiple of the step. unit is the
// range's, for messages.
func (ck valueChecker) integer(field string, r *Range, unit string, v any) *ValueError {
	n, res := asWholeInt(v)
	switch res {
	case intNotNumber:
		return ck.fail(CategoryType, field, "expected an integer, got %s %s", valueKind(v), showValue(v))
	case intFraction:
		return ck.fail(CategoryType, field, "expected an integer, got %s which is not a whole number", showValue(v))
	case intTooLarge:
		if sent := ck.sent(field); sent != "" {
			return ck.fail(CategoryRange, field, "%s (%s) is too large for an integer", sent, showValue(v))
		}
		return ck.fail(CategoryRange, field, "%s is too large for an integer", showValue(v))
	}
	return ck.inRange(field, "", r, unit, n)
}

// inRange checks n against r; what prefixes the value in messages, which
// name the range's unit.
func (ck valueChecker) inRange(field, what string, r *Range, unit string, n int64) *ValueError {
	if r == nil || fits(n, *r) {
		return nil
	}
	return rangeError(ck.instance, field, what, ck.sent(field), n, *r, unit)
}

// sent is how a member's value was sent when it was converted ("90 °F"),
// for messages that show both: "90 °F (32 °C)".
func (ck valueChecker) sent(field string) string {
	if c := ck.conv; c != nil && c.field == field {
		return c.sent
	}
	return ""
}

// enum checks that v is one of the option values. An empty option list,
// as for scenes not yet filled in, accepts any integer or scene object.
func (ck valueChecker) enum(field string, s valueSpec, v any) *ValueError {
	v = canonicalNumber(v)
	if len(s.options) == 0 {
		if s.onOff {
			return ck.onOffValue(field, v)
		}
		return ck.unlistedOption(field, v)
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

// structure checks a STRUCT value: no unknown members, every required
// member present, and each member by its definition.
func (ck valueChecker) structure(field string, s valueSpec, v any) *ValueError {
	m, ok := v.(map[string]any)
	if !ok {
		return ck.fail(CategoryType, field, "expected an object with members %s, got %s %s",
			strings.Join(fieldNames(s.fields), ", "), valueKind(v), showValue(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.ContainsFunc(s.fields, func(f Field) bool { return f.FieldName == k }) {
			return ck.fail(CategoryFormat, memberPath(field, k), "unknown member %q; allowed members are %s",
				k, strings.Join(fieldNames(s.fields), ", "))
		}
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
				return ck.fail(CategoryMissing, path, "required member %s is missing; %s", f.FieldName, ck.accepts(s.member(f)))
			}
			continue
		}
		if mv == nil {
			return ck.fail(CategoryEmpty, path, "member %s is null; omit it or %s", f.FieldName, ck.accepts(s.member(f)))
		}
		if err := ck.value(path, s.member(f), mv); err != nil {
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
