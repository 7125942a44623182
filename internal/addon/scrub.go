package addon

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"cloud2mqtt/internal/config"
)

// MaxShown is the longest value an error of app mode repeats. A longer one
// is more likely a pasted key than a typo, and anyone can read the app's log.
const MaxShown = 64

// minHidden is the shortest secret Scrub looks for: hiding every "1" of a
// message for a one-character password would leave nothing to read, and a
// secret that short protects nothing.
const minHidden = 4

// hidden is how a value an error must not show appears instead.
const hidden = "***"

// Scrub returns err with every secret value and every value longer than
// MaxShown in environ replaced by ***, as written or quoted, and then any
// quoted text still too long. errors.Is and errors.As still see err's chain.
func Scrub(err error, environ map[string]string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	clean := scrubText(text, unshown(environ))
	if clean == text {
		return err
	}
	return scrubbed{err: err, text: clean}
}

// scrubbed is an error whose text was scrubbed, wrapping the original.
type scrubbed struct {
	err  error
	text string
}

func (s scrubbed) Error() string { return s.text }
func (s scrubbed) Unwrap() error { return s.err }

// unshown lists the values of environ's settings an error must not show.
func unshown(environ map[string]string) []string {
	var out []string
	for _, v := range config.Vars() {
		s := environ[v.Name]
		if (v.Secret && len(s) >= minHidden) || utf8.RuneCountInString(s) > MaxShown {
			out = append(out, s)
		}
	}
	if s := environ[TokenVar]; len(s) >= minHidden {
		out = append(out, s)
	}
	return out
}

var quoted = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// scrubText hides each value (raw, and as %q and %+q write it) in text,
// longest first, then any quoted text longer than MaxShown.
func scrubText(text string, values []string) string {
	var forms []string
	for _, v := range values {
		forms = append(forms, v)
		for _, q := range []string{strconv.Quote(v), strconv.QuoteToASCII(v)} {
			if q = q[1 : len(q)-1]; q != v {
				forms = append(forms, q)
			}
		}
	}
	if len(forms) > 0 {
		sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
		pairs := make([]string, 0, 2*len(forms))
		for _, f := range forms {
			pairs = append(pairs, f, hidden)
		}
		text = strings.NewReplacer(pairs...).Replace(text)
	}
	return quoted.ReplaceAllStringFunc(text, func(q string) string {
		s, err := strconv.Unquote(q)
		if err != nil {
			s = q[1 : len(q)-1]
		}
		if utf8.RuneCountInString(s) > MaxShown {
			return `"` + hidden + `"`
		}
		return q
	})
}

// clip is s as an error may show it: itself up to MaxShown characters,
// else a note of its length.
func clip(s string) string {
	if n := utf8.RuneCountInString(s); n > MaxShown {
		return "(" + strconv.Itoa(n) + " characters, not shown)"
	}
	return s
}
