package config

import (
	"fmt"
	"slices"
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

// unquote is value without one pair of matching quotes ("…" or '…')
// wrapped around all of it, and whether it had them: docker run --env-file
// and systemd's EnvironmentFile= differ on quotes, and hand-written key
// files carry them too.
func unquote(value string) (string, bool) {
	if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
		return value[1 : len(value)-1], true
	}
	return value, false
}

// quotedVars returns environ with the variables of names that are wholly
// wrapped in quotes taken without them (a copy, when any), and a warning
// for each. A warning never shows the value: it may be a secret.
func quotedVars(environ map[string]string, names []string) (map[string]string, []string) {
	var warnings []string
	out := environ
	for _, n := range names {
		v, ok := unquote(environ[n])
		if !ok {
			continue
		}
		if len(warnings) == 0 {
			out = make(map[string]string, len(environ))
			for k, v := range environ {
				out[k] = v
			}
		}
		out[n] = v
		warnings = append(warnings, quotedWarning(n))
	}
	return out, warnings
}

// quotedWarning is the one warning for a value taken without its quotes.
func quotedWarning(name string) string {
	return fmt.Sprintf("%s is wrapped in quotes: they were removed and the value inside is used; "+
		"docker run --env-file keeps quotes as part of the value, so write %s=value without them", name, name)
}

// quotedFileWarning is the warning for a secret file (the file a *_FILE
// variable names, or a systemd credential) whose content is wrapped in
// quotes.
func quotedFileWarning(what string) string {
	return fmt.Sprintf("%s holds the secret wrapped in quotes: they were removed and the text inside is used; "+
		"write the secret alone in the file, without quotes", what)
}

// exportError is the error for a variable named "export NAME": a line
// "export NAME=value" of a shell-style file read by docker run --env-file,
// which takes the whole text before = as the name, so NAME is never set.
func exportError(raw, name string) error {
	return fmt.Errorf("%s is set as %s: the env file has a shell line \"export %s=...\", and docker run --env-file takes \"export %s\" as the name; "+
		"remove \"export \" from the line (env files hold NAME=value lines)", name, Quote(clipName(raw)), name, name)
}

// exportedVars lists, as errors, the variables of environ named
// "export NAME" (any case, any blanks) where NAME is one of names and is
// not set itself; and the names.
func exportedVars(environ map[string]string, names []string) ([]error, []string) {
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	var errs []error
	var found []string
	for raw := range environ {
		f := strings.Fields(raw)
		if len(f) != 2 || !strings.EqualFold(f[0], "export") || !known[f[1]] {
			continue
		}
		if _, set := environ[f[1]]; set {
			continue
		}
		found = append(found, f[1])
	}
	slices.Sort(found)
	for _, n := range found {
		for raw := range environ {
			if f := strings.Fields(raw); len(f) == 2 && f[1] == n && strings.EqualFold(f[0], "export") {
				errs = append(errs, exportError(raw, n))
				break
			}
		}
	}
	return errs, found
}
