package capability

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
)

// Category is one of the spec's reasons a control value is refused (its
// "Errors" table). The bridge checks values itself with the same categories,
// so a user learns about a bad value before a request is spent on it, in the
// words the cloud would have used.
type Category string

// The spec's error categories, spelled as the spec lists them.
const (
	CategoryMissing   Category = "missing parameter"
	CategoryEmpty     Category = "parameter value empty"
	CategoryFormat    Category = "invalid parameter format"
	CategoryType      Category = "invalid parameter type"
	CategoryRange     Category = "parameter value out of range"
	CategoryLength    Category = "parameter length does not meet requirements"
	CategoryDuplicate Category = "duplicate parameter value"
	CategoryUnknown   Category = "instance not found"
)

// Code is the HTTP-like code the spec gives the category: 404 for an unknown
// (or read-only) instance, 400 for everything else.
func (c Category) Code() int {
	if c == CategoryUnknown {
		return 404
	}
	return 400
}

// ValueError says why a value does not fit a capability's definition.
// Instance names the capability, Field the struct member (dotted path, empty
// for a plain value) and Msg what was wrong and what is accepted.
type ValueError struct {
	Category Category
	Instance string
	Field    string
	Msg      string
}

// Error reads like "brightness: parameter value out of range: 150 is above
// the maximum 100", or "segmentedColorRgb.segment: …" for a struct member.
func (e *ValueError) Error() string {
	where := e.Instance
	if e.Field != "" {
		if where != "" {
			where += "."
		}
		where += e.Field
	}
	if where == "" {
		return string(e.Category) + ": " + e.Msg
	}
	return where + ": " + string(e.Category) + ": " + e.Msg
}

// Code is 404 for CategoryUnknown and 400 otherwise, as in the spec.
func (e *ValueError) Code() int { return e.Category.Code() }

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

// valueChecker carries the instance name into every error.
type valueChecker struct{ instance string }

func (ck valueChecker) fail(cat Category, field, format string, args ...any) *ValueError {
	return &ValueError{Category: cat, Instance: ck.instance, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// readOnlyError is the error for a capability that takes no commands.
func readOnlyError(c Capability) *ValueError {
	what := c.Type
	if c.Parameters == nil && c.Type != TypeOnline && c.Type != TypeProperty && c.Type != TypeEvent {
		what += " without a parameters definition"
	}
	return &ValueError{Category: CategoryUnknown, Instance: c.Instance,
		Msg: fmt.Sprintf("instance is read-only (%s): it reports state and accepts no commands", what)}
}

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

// accepts describes what a definition takes, for messages.
func (ck valueChecker) accepts(s valueSpec) string {
	switch s.dataType {
	case DataEnum:
		if len(s.options) == 0 {
			if s.onOff {
				return "send 1 (on) or 0 (off)"
			}
			return "send an option value (an integer or a {paramId,id} object)"
		}
		return "send one of " + describeOptions(s.options)
	case DataInteger:
		if s.rng != nil {
			return fmt.Sprintf("send an integer from %d to %d", s.rng.Min, s.rng.Max)
		}
		return "send an integer"
	case DataStruct:
		return "send an object with members " + strings.Join(fieldNames(s.fields), ", ")
	case DataArray:
		return "send a list of " + describeElements(s)
	}
	return "send a value"
}

// describeOptions lists option names and values: `on (1), off (0)`; long
// lists (scenes) are cut after 20.
func describeOptions(opts []Option) string {
	const most = 20
	parts := make([]string, 0, min(len(opts), most)+1)
	for i, o := range opts {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(opts)-most))
			break
		}
		switch {
		case o.Name != "" && o.Value != nil:
			parts = append(parts, fmt.Sprintf("%s (%s)", o.Name, showValue(o.Value)))
		case o.Value != nil:
			parts = append(parts, showValue(o.Value))
		default:
			parts = append(parts, o.Name)
		}
	}
	return strings.Join(parts, ", ")
}

func describeElements(s valueSpec) string {
	switch {
	case s.elemRange != nil:
		return fmt.Sprintf("distinct integers from %d to %d", s.elemRange.Min, s.elemRange.Max)
	case len(s.options) > 0:
		return "distinct values among " + describeOptions(s.options)
	}
	return "distinct values"
}

func fieldNames(fs []Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.FieldName
	}
	return out
}

// showValue renders a value for a message: JSON, cut at 60 bytes.
func showValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return s
}

// valueKind names a value's JSON type for messages.
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// intCheck says whether a value is a usable integer.
type intCheck int

const (
	intOK intCheck = iota
	intNotNumber
	intFraction
	intTooLarge
)

// asWholeInt returns a whole number as an int64; floats with a fraction, NaN,
// infinities and numbers beyond int64 are reported as such.
func asWholeInt(v any) (int64, intCheck) {
	switch x := v.(type) {
	case int64:
		return x, intOK
	case int:
		return int64(x), intOK
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
			return 0, intFraction
		}
		if x >= 9.2e18 || x <= -9.2e18 {
			return 0, intTooLarge
		}
		return int64(x), intOK
	}
	return 0, intNotNumber
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

// canonicalNumber turns whole floats into int64 so option values compare with Equal.
func canonicalNumber(v any) any {
	if f, ok := v.(float64); ok {
		if n, res := asWholeInt(f); res == intOK {
			return n
		}
	}
	return v
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
