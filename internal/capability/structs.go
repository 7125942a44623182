package capability

// Validation of structured values: struct members, members whose options
// depend on another (work mode), and arrays (segments).

import (
	"fmt"
	"sort"
	"strings"
)

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

// describeDependent says what a dependent option accepts, for messages.
func describeDependent(d Option) string {
	switch {
	case len(d.Options) > 0:
		return "send one of " + describeOptions(d.Options)
	case d.DefaultValue != nil:
		return "send " + showValue(d.DefaultValue)
	case d.Range != nil:
		return fmt.Sprintf("send an integer from %d to %d", d.Range.Min, d.Range.Max)
	}
	return "send an integer"
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
