package capability

// color_setting: colorRgb holds a colour as one integer 0xRRGGBB, and
// reads it from a person's colour forms; so do the rgb members of other
// types' structs (segments, music). Its colorTemperatureK is a plain range.

import (
	"strconv"
	"strings"
)

// maxColor bounds a colour whatever a definition says (spec, "Limits" rule 3).
const maxColor = 16777215

const colorForms = `send #RRGGBB, RRGGBB, "r,g,b", {"r":…,"g":…,"b":…}, [r,g,b] or an integer 0 to 16777215`

// friendlyColor reads the colour forms into one integer 0xRRGGBB.
func (ck valueChecker) friendlyColor(field string, v any) (any, error) {
	switch x := v.(type) {
	case string:
		str := strings.TrimSpace(x)
		if str == "" {
			return "", nil
		}
		hex := strings.TrimPrefix(str, "#")
		if len(hex) == 6 && (hex != str || isHexDigits(hex)) {
			if !isHexDigits(hex) {
				return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
			}
			n, _ := strconv.ParseInt(hex, 16, 64)
			return n, nil
		}
		if strings.Contains(str, ",") {
			parts := strings.Split(str, ",")
			list := make([]any, len(parts))
			for i, p := range parts {
				n, ok := parseFriendlyNumber(p)
				if !ok {
					return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
				}
				list[i] = n
			}
			return ck.rgbTriple(field, list)
		}
		if n, ok := parseFriendlyNumber(str); ok {
			return n, nil
		}
		return nil, ck.fail(CategoryFormat, field, "%q is not a colour; %s", str, colorForms)
	case []any:
		return ck.rgbTriple(field, x)
	case map[string]any:
		list := make([]any, 3)
		for k, e := range x {
			i := strings.Index("rgb", strings.ToLower(k))
			if len(k) != 1 || i < 0 {
				return nil, ck.fail(CategoryFormat, field, "colour member %q is not r, g or b; %s", k, colorForms)
			}
			if list[i] != nil {
				return nil, ck.fail(CategoryDuplicate, field, "colour member %c given twice", "rgb"[i])
			}
			list[i] = e
		}
		for i, e := range list {
			if e == nil {
				return nil, ck.fail(CategoryMissing, field, "colour member %c is missing; %s", "rgb"[i], colorForms)
			}
		}
		return ck.rgbTriple(field, list)
	}
	return v, nil
}

func isHexDigits(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return s != ""
}

// rgbTriple combines red, green and blue (0 to 255 each) into one integer.
func (ck valueChecker) rgbTriple(field string, list []any) (any, error) {
	if len(list) != 3 {
		return nil, ck.fail(CategoryLength, field, "a colour list has 3 elements (red, green, blue), got %d; %s", len(list), colorForms)
	}
	var out int64
	for i, e := range list {
		e = friendlyInteger(e)
		n, res := asWholeInt(e)
		if res == intNotNumber || res == intFraction {
			return nil, ck.fail(CategoryType, field, "colour component %c is %s %s, expected an integer 0 to 255", "rgb"[i], valueKind(e), showValue(e))
		}
		if res == intTooLarge || n < 0 || n > 255 {
			return nil, ck.fail(CategoryRange, field, "colour component %c is %s, expected 0 to 255", "rgb"[i], showValue(e))
		}
		out = out<<8 | n
	}
	return out, nil
}
