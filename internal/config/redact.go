package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Redacted is how a set secret is shown; an unset one is shown as "".
const Redacted = "***"

// Secret is a string that never prints itself: fmt (every verb, %#v too),
// JSON, text marshalling and zerolog all show "***" when it is set and ""
// when it is not. Reveal returns the value for the one place that needs it.
type Secret string

// Reveal returns the secret itself, for the client that sends it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s != "" }

// String returns "***" for a set secret, "" for an unset one.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString keeps %#v from printing the secret.
func (s Secret) GoString() string { return "config.Secret(" + strconv.Quote(s.String()) + ")" }

// Format keeps every fmt verb (%d and %x included, which would otherwise
// print the raw string) to the redacted form.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// MarshalText makes encoding/json and friends print the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON writes the redacted settings keyed by variable, so that a
// password in a URL never reaches JSON output.
func (c Config) MarshalJSON() ([]byte, error) { return rowsJSON(c.Table()) }

// MarshalJSON writes the group's redacted settings, like Config's.
func (g Cloud) MarshalJSON() ([]byte, error) { return rowsJSON(groupRows(g)) }

// MarshalJSON writes the group's redacted settings, like Config's.
func (g MQTT) MarshalJSON() ([]byte, error) { return rowsJSON(groupRows(g)) }

// MarshalJSON writes the group's redacted settings, like Config's.
func (g HTTP) MarshalJSON() ([]byte, error) { return rowsJSON(groupRows(g)) }

func rowsJSON(rows [][2]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, row := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(row[0])
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(row[1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func groupRows(g any) [][2]string {
	fields := walk(g)
	rows := make([][2]string, len(fields))
	for i, f := range fields {
		rows[i] = [2]string{f.v.Name, display(f)}
	}
	return rows
}

// MarshalZerologObject writes every setting, secrets redacted, as fields named
// after their variables: log.Info().EmbedObject(cfg) or .Object("config", cfg).
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	for _, row := range c.Table() {
		e.Str(row[0], row[1])
	}
}

// String is every setting as NAME=value pairs, secrets redacted.
func (c Config) String() string { return rowsString(c.Table()) }

// rowsString renders rows as NAME=value pairs, quoting values that are empty
// or would be ambiguous.
func rowsString(rows [][2]string) string {
	var b strings.Builder
	for i, row := range rows {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(row[0])
		b.WriteByte('=')
		if row[1] == "" || strings.ContainsAny(row[1], " \t\"=") {
			b.WriteString(strconv.Quote(row[1]))
		} else {
			b.WriteString(row[1])
		}
	}
	return b.String()
}

// GoString keeps %#v from printing the secrets.
func (c Config) GoString() string { return "config.Config{" + c.String() + "}" }

// Format keeps every fmt verb to String (GoString for %#v): without it a
// verb such as %d would print the struct's fields, secrets included.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, c.GoString())
		return
	}
	_, _ = io.WriteString(f, c.String())
}

// The groups holding a secret get the same protection as Config, for code
// that prints cfg.Cloud or cfg.MQTT on its own.

// String prints the group's settings, the API key redacted.
func (g Cloud) String() string { return groupString(g) }

// GoString keeps %#v from printing the API key.
func (g Cloud) GoString() string { return "config.Cloud{" + g.String() + "}" }

// Format keeps every fmt verb from printing the API key.
func (g Cloud) Format(f fmt.State, verb rune) { formatGroup(f, verb, g) }

// String prints the group's settings, the password redacted.
func (g MQTT) String() string { return groupString(g) }

// GoString keeps %#v from printing the password.
func (g MQTT) GoString() string { return "config.MQTT{" + g.String() + "}" }

// Format keeps every fmt verb from printing the password.
func (g MQTT) Format(f fmt.State, verb rune) { formatGroup(f, verb, g) }

// String prints the group's settings, the token redacted.
func (g HTTP) String() string { return groupString(g) }

// GoString keeps %#v from printing the token.
func (g HTTP) GoString() string { return "config.HTTP{" + g.String() + "}" }

// Format keeps every fmt verb from printing the token.
func (g HTTP) Format(f fmt.State, verb rune) { formatGroup(f, verb, g) }

type group interface {
	String() string
	GoString() string
}

func formatGroup(f fmt.State, verb rune, g group) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, g.GoString())
		return
	}
	_, _ = io.WriteString(f, g.String())
}

func groupString(g any) string { return rowsString(groupRows(g)) }

// Table is every setting in Vars order as {variable, value} rows, secrets
// redacted, for the -check report and the startup log. A secret's row says
// where it came from.
func (c Config) Table() [][2]string {
	fields := walk(c)
	rows := make([][2]string, 0, len(fields)+1)
	for _, f := range fields {
		val := display(f)
		if raw, ok := c.unparsed[f.v.Name]; ok && !f.v.Secret {
			val = Quote(raw) + " (invalid)"
		}
		switch {
		case f.v.Name == "CLOUD_API_KEY" && c.apiKeySource != "":
			val += " (from " + c.apiKeySource + ")"
		case f.v.Name == "MQTT_PASSWORD" && c.passwordSource != "":
			val += " (from " + c.passwordSource + ")"
		case f.v.Name == "HTTP_TOKEN" && c.httpTokenSource != "":
			val += " (from " + c.httpTokenSource + ")"
		}
		if shown, ok := c.inEffect(f.v.Name); ok {
			val = shown
		} else if note := c.unused(f.v.Name); note != "" {
			val = strings.TrimSpace(val + " (not used: " + note + ")")
		}
		rows = append(rows, [2]string{f.v.Name, val})
	}
	if c.Demo {
		rows = append(rows, [2]string{"demo", "true"})
	}
	return rows
}

// inEffect is what the bridge uses instead of a setting's value in -demo,
// so the log and -check do not show an address it does not use.
func (c Config) inEffect(name string) (string, bool) {
	if !c.Demo {
		return "", false
	}
	switch name {
	case "CLOUD_BASE_URL":
		return "the simulated cloud (-demo)", true
	case "CLOUD_API_KEY":
		return "the simulator's (-demo)", true
	case "MQTT_URL":
		return EmbeddedBroker + " (-demo: the embedded broker on MQTT_LISTEN)", true
	case "LAN_ENABLED":
		return "true (-demo: three lights on the LAN simulator)", true
	case "LAN_LISTEN", "LAN_SCAN_TARGETS":
		return "the LAN simulator's (-demo)", true
	}
	return "", false
}

// unused says why a setting has no effect in this configuration.
func (c Config) unused(name string) string {
	if name == "MQTT_LISTEN" && !c.Demo && !c.Embedded() {
		return "only for MQTT_URL=embedded"
	}
	if strings.HasPrefix(name, "LAN_") && name != "LAN_ENABLED" && !c.Local.Enabled && !c.Demo {
		return "only with LAN_ENABLED=true"
	}
	if name == "HTTP_TOKEN" && c.HTTP.Token.IsSet() && c.HTTP.Addr == "" {
		return "HTTP_ADDR is empty: no status page"
	}
	return ""
}

// display is one setting's printable value.
func display(f field) string {
	switch v := f.value.Interface().(type) {
	case Secret:
		return v.String()
	case time.Duration:
		return FormatDuration(v)
	case string:
		if f.redactURL {
			return redactURL(v)
		}
		return v
	default:
		return fmt.Sprint(v)
	}
}

// redactURL hides a password in a URL's user info. A value that does not
// parse is not shown at all, since url.Parse's error would repeat it.
func redactURL(s string) string {
	if s == "" || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL, not shown)"
	}
	return u.Redacted()
}

// FormatDuration prints d without the zero units time.Duration.String adds:
// 1m instead of 1m0s, 6h instead of 6h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
