package capability

// on_off and toggle: an ENUM of 1 (on) and 0 (off) that takes on/off words,
// and 1 or 0 even when the definition lists no options. Struct members with
// exactly these options take the words too.

import "strings"

var onOffRules = typeRules{onOff: true}

// onOffValue checks an on/off value while the definition lists no options.
func (ck valueChecker) onOffValue(field string, v any) *ValueError {
	n, res := asWholeInt(v)
	switch {
	case res == intOK && (n == 0 || n == 1):
		return nil
	case res == intNotNumber:
		return ck.fail(CategoryType, field, "expected 1 (on) or 0 (off), got %s %s", valueKind(v), showValue(v))
	}
	return ck.fail(CategoryRange, field, "%s is not 1 (on) or 0 (off)", showValue(v))
}

// onOffWord reads on/off, true/false, yes/no and 1/0 in any case, and JSON
// booleans.
func onOffWord(v any) (int64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		switch strings.ToLower(x) {
		case "on", "true", "yes", "1":
			return 1, true
		case "off", "false", "no", "0":
			return 0, true
		}
	}
	return 0, false
}

// onOffOptions reports whether an option list is exactly on=1 and off=0.
func onOffOptions(opts []Option) bool {
	if len(opts) != 2 {
		return false
	}
	seen := map[string]bool{}
	for _, o := range opts {
		n, res := asWholeInt(canonicalNumber(o.Value))
		if res != intOK {
			return false
		}
		name := strings.ToLower(strings.TrimSpace(o.Name))
		switch {
		case name == "on" && n == 1, name == "off" && n == 0:
			seen[name] = true
		default:
			return false
		}
	}
	return len(seen) == 2
}
