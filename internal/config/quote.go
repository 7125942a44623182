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

// Quote is a value as every configuration error shows it: quoted like %q
// and cut to 64 characters, saying how long it was. Never give it a secret.
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

// clipQuoted cuts every quoted string in msg to 64 characters, for other
// packages' parse errors that quote their input in full.
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

// unquote strips one pair of quotes wrapped around all of value, because
// docker --env-file and systemd's EnvironmentFile= differ on quotes.
func unquote(value string) (string, bool) {
	if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
		return value[1 : len(value)-1], true
	}
	return value, false
}

// quotedVars returns a copy of environ with wrapping quotes stripped, and
// a warning for each that never shows the value, which may be a secret.
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

// exportError is the error for a variable named "export NAME", which docker
// --env-file makes of a shell line "export NAME=value", so NAME is unset.
func exportError(raw, name string) error {
	return fmt.Errorf("%s is set as %s: the env file has a shell line \"export %s=...\", and docker run --env-file takes \"export %s\" as the name; "+
		"remove \"export \" from the line (env files hold NAME=value lines)", name, Quote(clipName(raw)), name, name)
}

// exportedVars lists as errors the "export NAME" variables whose NAME is a
// setting not set itself, and returns those names.
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
