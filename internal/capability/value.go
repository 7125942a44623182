package capability

import (
	"encoding/json"
	"fmt"
	"math"
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
