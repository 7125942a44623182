package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxShown is the most characters of a value (or a name) an error shows:
// enough to recognise what was set, short enough that a pasted file, a
// token or a flood of text does not fill the log or the error topic.
const maxShown = 64

// Quote is a value as every configuration and settings error shows it:
// quoted like %q, and when it is longer than 64 characters, its first 64
// and how long it was: "aaaa…"… (300 characters). Never give it a secret:
// errors about secrets do not show their value at all.
func Quote(value string) string {
	n := utf8.RuneCountInString(value)
	if n <= maxShown {
		return strconv.Quote(value)
	}
	return fmt.Sprintf("%s… (%d characters)", strconv.Quote(cutRunes(value, maxShown)), n)
}

// Clip is Quote without the quotes, for values shown as they are (a path,
// a URL): a value over 64 characters is cut, saying how long it was.
func Clip(value string) string {
	n := utf8.RuneCountInString(value)
	if n <= maxShown {
		return value
	}
	return fmt.Sprintf("%s… (%d characters)", cutRunes(value, maxShown), n)
}

// clipQuoted cuts every quoted string (as %q writes it) of more than 64
// characters in msg, saying how long it was: for messages of other
// packages' parsers (LAN_LISTEN's, LAN_SCAN_TARGETS'), which quote what
// they were given in full.
func clipQuoted(msg string) string {
	if len(msg) <= maxShown {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				if v, err := strconv.Unquote(q); err == nil {
					b.WriteString(Quote(v))
					i += len(q)
					continue
				}
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

// cutRunes is the first n runes of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// crVars lists the variables of names whose value in environ ends in a
// carriage return, and returns environ without them (a copy, when any).
func crVars(environ map[string]string, names []string) (map[string]string, []string) {
	var found []string
	for _, n := range names {
		if strings.HasSuffix(environ[n], "\r") {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return environ, nil
	}
	out := make(map[string]string, len(environ))
	for k, v := range environ {
		out[k] = v
	}
	for _, n := range found {
		out[n] = strings.TrimRight(environ[n], "\r")
	}
	return out, found
}

// crError is the one message for every value that ends in a carriage
// return: the file they come from was saved with Windows line endings.
func crError(names []string) error {
	verb, pronoun := "ends", "it is"
	if len(names) > 1 {
		verb, pronoun = "end", "they are"
	}
	return fmt.Errorf("%s %s in a carriage return (\\r): the file %s set in has Windows line endings (CRLF); "+
		"save it with Unix line endings (LF), for example sed -i 's/\\r$//' FILE or dos2unix FILE "+
		"(FILE: /etc/cloud2mqtt/cloud2mqtt.env for the .deb and the systemd unit, the env_file of docker compose)",
		strings.Join(names, ", "), verb, pronoun)
}
