package testkit

import (
	"strings"
	"unicode"
)

// Anchor is the fragment GitHub gives a Markdown heading: lower case,
// letters, digits, hyphens and underscores kept, spaces as hyphens, the
// rest (code and emphasis marks, punctuation) dropped.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
