package capability

// segment_color_setting: a struct of a segment list and a colour or
// brightness for them. A person may send the list as one index, ranges
// ("0-4,7") or "all".

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxSegmentExpand bounds the lists "all" and "a-b" may produce.
const maxSegmentExpand = 1024

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
			if err := ck.inRange(field, what, s.elemRange, "", n); err != nil {
				return err
			}
		}
		if s.elemRange == nil && len(s.options) > 0 {
			if !slices.ContainsFunc(s.options, func(o Option) bool { return Equal(canonicalNumber(o.Value), canonicalNumber(e)) }) {
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

// friendlyArray reads a segment list given as a list, one integer, a
// string of indexes and ranges ("0-4,7") or "all".
func (ck valueChecker) friendlyArray(field string, s valueSpec, v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = friendlyInteger(e)
		}
		return out, nil
	case int64, float64:
		return []any{x}, nil
	case string:
		str := strings.TrimSpace(x)
		if str == "" {
			return []any{}, nil
		}
		if strings.EqualFold(str, "all") {
			return ck.allElements(field, s)
		}
		var out []any
		for _, part := range strings.Split(str, ",") {
			part = strings.TrimSpace(part)
			lo, hi, isRange := strings.Cut(part, "-")
			if !isRange {
				n, err := strconv.ParseInt(part, 10, 64)
				if err != nil {
					return nil, ck.fail(CategoryFormat, field, "%q is not a segment list; send a list, an index, indexes and ranges like \"0-4,7\", or \"all\"", str)
				}
				out = append(out, n)
				continue
			}
			a, err1 := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
			b, err2 := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
			if err1 != nil || err2 != nil || a < 0 || a > b {
				return nil, ck.fail(CategoryFormat, field, "%q is not a segment range; write the lower index first, like \"0-4\"", part)
			}
			if b-a >= maxSegmentExpand || len(out)+int(b-a) >= maxSegmentExpand {
				return nil, ck.fail(CategoryLength, field, "%q names more than %d segments; %s", part, maxSegmentExpand, ck.accepts(s))
			}
			for i := range b - a + 1 {
				out = append(out, a+i)
			}
		}
		return out, nil
	}
	return v, nil
}

// allElements lists every element value the definition allows.
func (ck valueChecker) allElements(field string, s valueSpec) (any, error) {
	var out []any
	switch {
	case s.elemRange != nil:
		lo, hi := int64(s.elemRange.Min), int64(s.elemRange.Max)
		if hi-lo >= maxSegmentExpand {
			return nil, ck.fail(CategoryLength, field, "\"all\" would name more than %d segments; send a list", maxSegmentExpand)
		}
		for i := range hi - lo + 1 {
			out = append(out, lo+i)
		}
	case len(s.options) > 0:
		for _, o := range s.options {
			out = append(out, cloneValue(canonicalNumber(o.Value)))
		}
	default:
		return nil, ck.fail(CategoryFormat, field, "\"all\" needs a definition that lists the allowed segments; send a list of indexes")
	}
	return out, nil
}

// exampleArray is a list of the smallest size allowed, of the first
// elements allowed.
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
		for _, o := range s.options[:min(n, len(s.options))] {
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
