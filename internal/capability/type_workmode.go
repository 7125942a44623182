package capability

// work_mode: a struct whose modeValue's options depend on the workMode
// chosen. Such dependent members are recognised by their shape, whatever
// the type; a scalar sent for the struct is the work mode.

import "slices"

var workModeRules = typeRules{instances: []string{InstanceWorkMode}, scalar: memberScalar(InstanceWorkMode)}

// isDependent reports whether a struct member's options depend on another
// member: every option has a name and no value of its own.
func isDependent(f Field) bool {
	return len(f.Options) > 0 && !slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value != nil || o.Name == "" })
}

// controller finds the member a dependent member's options are named after,
// in practice always workMode.
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

// dependent checks a member against the nested options, default value or
// range of the option chosen in its controller.
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
		return ck.integer(path, nil, "", mv)
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
		if err := ck.integer(path, d.Range, "", mv); err != nil {
			err.Msg += " (mode " + mode + ")"
			return err
		}
		return nil
	}
}

// friendlyDependents converts each dependent member of m towards the
// option chosen for it, after the members it depends on.
func (ck valueChecker) friendlyDependents(field string, fields []Field, m map[string]any) error {
	for _, f := range fields {
		e, ok := m[f.FieldName]
		if !ok || !isDependent(f) {
			continue
		}
		sub := valueSpec{dataType: DataInteger}
		if d, _, ok := chosenDependent(fields, f, m); ok && len(d.Options) > 0 {
			sub = valueSpec{dataType: DataEnum, options: d.Options}
		}
		conv, err := ck.friendly(memberPath(field, f.FieldName), sub, false, e)
		if err != nil {
			return err
		}
		m[f.FieldName] = conv
	}
	return nil
}

// exampleDependents adds to m the example of each dependent member the
// chosen option requires: its default, first option or minimum.
func exampleDependents(fields []Field, m map[string]any) {
	for _, f := range fields {
		if !isDependent(f) {
			continue
		}
		d, _, ok := chosenDependent(fields, f, m)
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
}

// defaultDependents fills each omitted (or null) dependent member of m
// with the chosen option's default, else the member's own; a null one
// without a default is dropped.
func defaultDependents(fields []Field, m map[string]any) {
	for _, f := range fields {
		if e, ok := m[f.FieldName]; !isDependent(f) || ok && e != nil {
			continue
		}
		if d, _, ok := chosenDependent(fields, f, m); ok && d.DefaultValue != nil {
			m[f.FieldName] = cloneValue(d.DefaultValue)
		} else if f.DefaultValue != nil {
			m[f.FieldName] = cloneValue(f.DefaultValue)
		} else {
			delete(m, f.FieldName)
		}
	}
}
