package capability

// The errors of Validate and Decode: the spec's categories, and the words
// that say what was sent and what a definition accepts.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrSuperseded is a command's outcome when a newer command for the same
// device and setting replaced it before it was sent. The newer one reports,
// so a caller does nothing with it.
var ErrSuperseded = errors.New("superseded by a newer command for the same device and setting before it was sent")

// Category is one of the spec's reasons a control value is refused. The
// bridge checks values itself so a user learns of a bad value before a
// request is spent on it, in the words the cloud would use.
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

// valueChecker carries the instance name into every error, and the
// conversion of a member sent in another unit (typeRules.toDevice).
type valueChecker struct {
	instance string
	conv     *conversion
}

// conversion is a member converted into its range's unit: field is its
// path, sent what was sent ("90 °F").
type conversion struct{ field, sent string }

func (ck valueChecker) fail(cat Category, field, format string, args ...any) *ValueError {
	return &ValueError{Category: cat, Instance: ck.instance, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// readOnlyError is the error for a capability that takes no commands.
func readOnlyError(c Capability) *ValueError {
	what := c.Type
	if c.Parameters == nil && !types[c.Type].readOnly {
		what += " without a parameters definition"
	}
	return &ValueError{Category: CategoryUnknown, Instance: c.Instance,
		Msg: fmt.Sprintf("instance is read-only (%s): it reports state and accepts no commands", what)}
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
			return fmt.Sprintf("send an integer from %s to %s", withUnit(int64(s.rng.Min), s.unit), withUnit(int64(s.rng.Max), s.unit))
		}
		return "send an integer"
	case DataStruct:
		return "send an object with members " + strings.Join(fieldNames(s.fields), ", ")
	case DataArray:
		return "send a list of " + describeElements(s)
	}
	return "send a value"
}

// RangeError is the error of n outside r or off its steps, in Validate's
// words, or nil when n fits; shown, if not empty, is the value as sent
// before conversion ("600 mireds"). Callers that convert values use it so
// every path refuses a value in the same words.
func RangeError(instance, field, shown string, n int64, r Range, unit string) *ValueError {
	if fits(n, r) {
		return nil
	}
	return rangeError(instance, field, "", shown, n, r, UnitSymbol(unit))
}

// fits reports whether n is inside r and on its steps.
func fits(n int64, r Range) bool {
	step := int64(r.Step())
	return n >= int64(r.Min) && n <= int64(r.Max) && (step == 1 || (n-int64(r.Min))%step == 0)
}

// rangeError says why n does not fit r. It builds the message in one
// builder so a flood of refused values costs little.
func rangeError(instance, field, what, sent string, n int64, r Range, sym string) *ValueError {
	var b strings.Builder
	b.Grow(len(what) + len(sent) + 64)
	b.WriteString(what)
	if sent != "" {
		b.WriteString(sent)
		b.WriteString(" (")
	}
	writeUnit(&b, n, sym)
	if sent != "" {
		b.WriteString(")")
	}
	switch {
	case n < int64(r.Min):
		b.WriteString(" is below the minimum ")
		writeUnit(&b, int64(r.Min), sym)
	case n > int64(r.Max):
		b.WriteString(" is above the maximum ")
		writeUnit(&b, int64(r.Max), sym)
	default:
		b.WriteString(" is not on the step ")
		writeUnit(&b, int64(r.Step()), sym)
		b.WriteString(" counted from ")
		writeUnit(&b, int64(r.Min), sym)
	}
	return &ValueError{Category: CategoryRange, Instance: instance, Field: field, Msg: b.String()}
}

// UnitSymbol writes a definition's unit ("unit.percent", "Celsius") the way
// people read it ("%", "°C"), so every place that shows a unit agrees.
func UnitSymbol(u string) string {
	if t := tempUnitOf(u); t != unitUnknown && len(strings.TrimSpace(u)) > 2 {
		return t.symbol() // "Celsius", "unit.fahrenheit"; not a bare "c"
	}
	switch k := strings.ToLower(strings.TrimSpace(u)); k {
	case "":
		return ""
	case "unit.percent", "percent", "%":
		return "%"
	case "unit.kelvin", "kelvin", "k":
		return "K"
	default:
		return strings.TrimPrefix(strings.TrimSpace(u), "unit.")
	}
}

// withUnit writes n with its unit symbol: "40%", "22 °C", "2700 K", "7".
func withUnit(n int64, sym string) string {
	var b strings.Builder
	writeUnit(&b, n, sym)
	return b.String()
}

func writeUnit(b *strings.Builder, n int64, sym string) {
	var digits [20]byte
	b.Write(strconv.AppendInt(digits[:0], n, 10))
	switch sym {
	case "":
	case "%":
		b.WriteString(sym)
	default:
		b.WriteString(" ")
		b.WriteString(sym)
	}
}

// describeOptions lists option names and values: `on (1), off (0)`.
func describeOptions(opts []Option) string {
	return firstOptions(opts, func(o Option) string {
		switch {
		case o.Name != "" && o.Value != nil:
			return fmt.Sprintf("%s (%s)", o.Name, showValue(o.Value))
		case o.Value != nil:
			return showValue(o.Value)
		}
		return o.Name
	})
}

// describeNames lists what a person may send for an ENUM: its option names
// (and on/off words).
func describeNames(opts []Option, onOff bool) string {
	if onOff {
		return "on, off, true, false, yes, no, 1 or 0"
	}
	if !slices.ContainsFunc(opts, func(o Option) bool { return o.Name != "" }) {
		return describeOptions(opts)
	}
	return firstOptions(opts, func(o Option) string {
		if o.Name != "" {
			return fmt.Sprintf("%q", o.Name)
		}
		return showValue(o.Value)
	}) + " (names in any case) or the option value"
}

// firstOptions shows the first 20 options (scene lists are long) and how
// many more there are.
func firstOptions(opts []Option, show func(Option) string) string {
	const most = 20
	parts := make([]string, 0, min(len(opts), most)+1)
	for i, o := range opts {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(opts)-most))
			break
		}
		parts = append(parts, show(o))
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
