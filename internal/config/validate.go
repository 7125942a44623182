package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Validate reports every problem of the configuration at once, one line per
// problem, each naming the variable and the fix. It never prints a secret.
// Call it after Load and after setting Demo.
//
// others are the problems of the settings this package keeps as text for
// another to parse (LAN_LISTEN and LAN_SCAN_TARGETS, which lan parses where
// the LAN client is built; app.Validate passes them): listed with the rest,
// nil ones skipped, a quoted value cut as every value is.
func (c Config) Validate(others ...error) error {
	v := validator{unparsed: c.unparsed}
	v.tags(c) // rules.go
	v.cloud(c)
	v.stateDir(c)
	v.mqtt(c)
	v.homeAssistant(c)
	v.http(c)
	for _, err := range others {
		if err != nil {
			v.problems = append(v.problems, errors.New(clipQuoted(err.Error())))
		}
	}
	if len(v.problems) == 0 {
		return nil
	}
	return fmt.Errorf("config: %w", errors.Join(v.problems...))
}

// validator collects problems, skipping variables Load already reported.
type validator struct {
	unparsed map[string]string
	problems []error
}

// cloud checks the cloud's address, key, key header and events.
func (v *validator) cloud(c Config) {
	switch {
	case c.Cloud.BaseURL == "" && !c.Demo:
		v.add("CLOUD_BASE_URL", "CLOUD_BASE_URL is empty: set it to the cloud API's base address, like https://api.example.com (or run with -demo)"+exportHint("CLOUD_BASE_URL"))
	case c.Cloud.BaseURL != "":
		if v.httpURL("CLOUD_BASE_URL", c.Cloud.BaseURL) {
			v.baseURLPath("CLOUD_BASE_URL", c.Cloud.BaseURL)
		}
	}
	switch {
	case !c.Cloud.APIKey.IsSet() && !c.Demo:
		v.add("CLOUD_API_KEY", "CLOUD_API_KEY is empty: set it, or CLOUD_API_KEY_FILE, or a systemd credential named "+CredentialAPIKey+exportHint("CLOUD_API_KEY"))
	case strings.IndexFunc(c.Cloud.APIKey.Reveal(), func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		v.add("CLOUD_API_KEY", "CLOUD_API_KEY contains a space, line break or control character (not shown): check that it, or its file, holds only the key")
	}
	if !isToken(c.Cloud.KeyHeader) {
		v.add("CLOUD_API_KEY_HEADER", fmt.Sprintf("CLOUD_API_KEY_HEADER=%s is not an HTTP header name: use letters, digits and -, like Service-API-Key", Quote(c.Cloud.KeyHeader)))
	}
	if c.Cloud.EventsURL != "" {
		v.brokerURL("CLOUD_EVENTS_URL", c.Cloud.EventsURL, "like mqtts://events.example.com:8883; empty turns events off")
	}
}

// exportHint ends the message of a required setting that is empty: systemd's
// EnvironmentFile= drops a line "export NAME=value" (it logs that only in
// the journal), so the daemon sees no NAME at all.
func exportHint(name string) string {
	return "; if the env file has a line \"export " + name + "=...\", remove \"export \" (systemd ignores such lines)"
}

// stateDir checks that STATE_DIR is absolute.
func (v *validator) stateDir(c Config) {
	if d := c.State.Dir; d != "" && !filepath.IsAbs(d) {
		v.add("STATE_DIR", fmt.Sprintf("STATE_DIR=%s is not an absolute path: use one like /var/lib/cloud2mqtt (under systemd, StateDirectory=cloud2mqtt sets it)", Quote(d)))
	}
}

// mqtt checks the broker's URL (or the embedded broker's address), credentials, TLS files,
// client id and base topic.
func (v *validator) mqtt(c Config) {
	tlsURL := false
	switch {
	case c.Embedded():
		if err := hostPort(c.MQTT.Listen); err != nil {
			v.add("MQTT_LISTEN", fmt.Sprintf("MQTT_LISTEN=%s %v: use host:port, like 127.0.0.1:1883", Quote(c.MQTT.Listen), err))
		}
	default:
		tlsURL = v.brokerURL("MQTT_URL", c.MQTT.URL, "like tcp://127.0.0.1:1883, or the word embedded for the built-in broker")
	}
	if c.MQTT.Password.IsSet() && c.MQTT.Username == "" {
		v.add("MQTT_USERNAME", "MQTT_PASSWORD is set but MQTT_USERNAME is empty: MQTT sends a password only with a user name, so set MQTT_USERNAME")
	}
	if (c.MQTT.CertFile == "") != (c.MQTT.KeyFile == "") {
		v.add("MQTT_CERT_FILE", "MQTT_CERT_FILE and MQTT_KEY_FILE must be set together")
	}
	tlsFiles := c.MQTT.CAFile != "" || c.MQTT.CertFile != "" || c.MQTT.KeyFile != ""
	if tlsFiles && !tlsURL {
		v.add("MQTT_URL", "MQTT_CA_FILE, MQTT_CERT_FILE or MQTT_KEY_FILE is set but MQTT_URL is not a TLS URL: use ssl://, mqtts://, tls:// or wss://, or unset the files")
	}
	if c.MQTT.CAFile != "" {
		if b, err := readFile("MQTT_CA_FILE", c.MQTT.CAFile); err != nil {
			v.add("MQTT_CA_FILE", err.Error())
		} else if !x509.NewCertPool().AppendCertsFromPEM(b) {
			v.add("MQTT_CA_FILE", fmt.Sprintf("MQTT_CA_FILE=%s holds no PEM certificate: point it at the CA's certificate (-----BEGIN CERTIFICATE-----)", Clip(c.MQTT.CAFile)))
		}
	}
	if c.MQTT.CertFile != "" && c.MQTT.KeyFile != "" {
		_, certErr := readFile("MQTT_CERT_FILE", c.MQTT.CertFile)
		_, keyErr := readFile("MQTT_KEY_FILE", c.MQTT.KeyFile)
		switch {
		case certErr != nil || keyErr != nil:
			if certErr != nil {
				v.add("MQTT_CERT_FILE", certErr.Error())
			}
			if keyErr != nil {
				v.add("MQTT_KEY_FILE", keyErr.Error())
			}
		default:
			if _, err := tls.LoadX509KeyPair(c.MQTT.CertFile, c.MQTT.KeyFile); err != nil {
				v.add("MQTT_CERT_FILE", fmt.Sprintf("MQTT_CERT_FILE and MQTT_KEY_FILE are not a PEM certificate and its private key (%v): check both files", err))
			}
		}
	}
	switch id := c.MQTT.ClientID; {
	case len(id) > MaxClientIDLength:
		v.add("MQTT_CLIENT_ID", fmt.Sprintf("MQTT_CLIENT_ID is %d bytes long: use at most %d (brokers refuse or cut longer ones), or leave it empty for an id the bridge makes and keeps in STATE_DIR", len(id), MaxClientIDLength))
	case strings.IndexFunc(id, unicode.IsControl) >= 0 || strings.ContainsAny(id, "+#/"):
		v.add("MQTT_CLIENT_ID", fmt.Sprintf("MQTT_CLIENT_ID=%s contains a control character, +, # or /: use letters, digits, - and _, or leave it empty", Quote(id)))
	}
	v.topicBase("MQTT_BASE_TOPIC", c.MQTT.BaseTopic, "cloud2mqtt")
}

// homeAssistant checks the discovery prefix and the birth topic.
func (v *validator) homeAssistant(c Config) {
	v.topicBase("HA_DISCOVERY_PREFIX", c.HA.DiscoveryPrefix, "homeassistant")
	v.topicName("HA_STATUS_TOPIC", c.HA.StatusTopic, "homeassistant/status")
}

// http checks the HTTP address.
func (v *validator) http(c Config) {
	if c.HTTP.Addr != "" {
		if err := hostPort(c.HTTP.Addr); err != nil {
			v.add("HTTP_ADDR", fmt.Sprintf("HTTP_ADDR=%s %v: use host:port, like 127.0.0.1:8080 or :8080, or leave it empty to turn HTTP off", Quote(c.HTTP.Addr), err))
		}
	}
	if n := utf8.RuneCountInString(c.HTTP.Token.Reveal()); n > 0 && n < MinHTTPTokenLength {
		v.add("HTTP_TOKEN", fmt.Sprintf("HTTP_TOKEN is too short: use at least %d characters (it has %d; anyone on the network may guess a short one), e.g. a random one from: openssl rand -hex 16", MinHTTPTokenLength, n))
	}
	for _, h := range c.HTTP.HostNames() {
		if !hostName(strings.TrimPrefix(h, "*.")) {
			v.add("HTTP_HOSTS", fmt.Sprintf("HTTP_HOSTS has %s, which is not a host name: list names without scheme, port or path, separated by commas, like bridge.example.com,*.example.org", Quote(h)))
		}
	}
}

// MaxClientIDLength is the longest MQTT_CLIENT_ID accepted, in bytes:
// MQTT 3.1.1 obliges a broker to take 23, and the bridge's own ids are that
// long; a longer one is a mistake (a pasted secret, a file's content) that
// some brokers refuse only at connect.
const MaxClientIDLength = 256

// MinHTTPTokenLength is the shortest HTTP_TOKEN accepted: a guess needs
// too many tries even unthrottled (the endpoint also slows wrong ones).
const MinHTTPTokenLength = 16

// hostName reports whether s is a DNS name or an IP address (IPv6 with or
// without brackets).
func hostName(s string) bool {
	if net.ParseIP(strings.Trim(s, "[]")) != nil {
		return true
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

func (v *validator) add(name, msg string) {
	if _, ok := v.unparsed[name]; ok {
		return
	}
	v.problems = append(v.problems, errors.New(clipQuoted(msg)))
}

// httpURL checks an http(s) URL with a host, and reports whether it is
// one. It shows the value with any password in it redacted.
func (v *validator) httpURL(name, s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		v.add(name, fmt.Sprintf("%s=%s is not an http:// or https:// URL with a host: use the base address, like https://api.example.com", name, Quote(redactURL(s))))
		return false
	}
	ok := true
	if u.User != nil {
		v.add(name, fmt.Sprintf("%s=%s carries a user or password: remove it; the API key goes in CLOUD_API_KEY", name, Quote(redactURL(s))))
		ok = false
	}
	if u.RawQuery != "" || u.Fragment != "" {
		v.add(name, fmt.Sprintf("%s=%s has a query or fragment: give only scheme, host and optional path", name, Quote(redactURL(s))))
		ok = false
	}
	return ok
}

// apiPaths are the paths the cloud client appends to CLOUD_BASE_URL (its
// endpoints; a test keeps them in step with internal/cloud), and the
// shorter forms people copy from the API's documentation.
var apiPaths = []string{
	"/router/api/v1/user/devices", "/router/api/v1/device/state", "/router/api/v1/device/scenes",
	"/router/api/v1/device/diy-scenes", "/router/api/v1/device/control",
	"/router/api/v1", "/router/api", "/router",
}

// baseURLPath refuses a base URL that already holds the API's own path,
// like https://host/router/api/v1: the bridge appends that path itself, so
// every request would go to /router/api/v1/router/api/v1/... and be answered
// "not found". The message gives the URL to use instead. A path of another
// kind (a reverse proxy's prefix, https://host/cloud) is kept.
func (v *validator) baseURLPath(name, s string) {
	u, err := url.Parse(s)
	if err != nil {
		return
	}
	path := strings.TrimRight(u.Path, "/")
	lower := strings.ToLower(path)
	for _, p := range apiPaths {
		i := strings.Index(lower, p)
		if i < 0 || (i+len(p) < len(lower) && lower[i+len(p)] != '/') {
			continue
		}
		fixed := *u
		fixed.Path, fixed.RawPath = path[:i], ""
		v.add(name, fmt.Sprintf("%s=%s includes the API's path %s, which the bridge appends itself: set it to %s (scheme and host only)",
			name, Quote(redactURL(s)), Clip(path[i:]), Clip(fixed.Redacted())))
		return
	}
}

// brokerSchemes are the MQTT URL schemes the MQTT client accepts, and
// whether each uses TLS; the error for another names them all, in the
// order of brokerSchemeNames.
var brokerSchemes = map[string]bool{"tcp": false, "mqtt": false, "ssl": true, "mqtts": true, "tls": true, "ws": false, "wss": true}

// brokerSchemeNames are brokerSchemes' keys as an error lists them.
var brokerSchemeNames = []string{"tcp", "mqtt", "ssl", "mqtts", "tls", "ws", "wss"}

// schemeList is brokerSchemeNames as a user writes them: "tcp://, mqtt://,
// ... or wss://".
func schemeList() string {
	names := make([]string, len(brokerSchemeNames))
	for i, n := range brokerSchemeNames {
		names[i] = n + "://"
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// brokerURL checks an MQTT broker URL and reports whether it uses TLS.
func (v *validator) brokerURL(name, s, example string) bool {
	u, err := url.Parse(s)
	if err != nil {
		v.add(name, fmt.Sprintf("%s=%s is not a URL: %s", name, Quote(redactURL(s)), example))
		return false
	}
	isTLS, ok := brokerSchemes[strings.ToLower(u.Scheme)]
	if !ok {
		v.add(name, fmt.Sprintf("%s=%s has scheme %s: use %s, %s", name, Quote(redactURL(s)), Quote(u.Scheme), schemeList(), example))
		return false
	}
	if fixed, ok := bracketIPv6(u); ok {
		v.add(name, fmt.Sprintf("%s=%s: put an IPv6 address in brackets: %s", name, Quote(redactURL(s)), Clip(fixed)))
		return isTLS
	}
	if u.Hostname() == "" {
		v.add(name, fmt.Sprintf("%s=%s has no host: %s", name, Quote(redactURL(s)), example))
		return isTLS
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			v.add(name, fmt.Sprintf("%s=%s has port %s: use 1 to 65535, %s", name, Quote(redactURL(s)), Quote(p), example))
		}
	}
	// Only a WebSocket dials the path; the others would drop it unsaid.
	if scheme := strings.ToLower(u.Scheme); scheme != "ws" && scheme != "wss" && u.Path != "" && u.Path != "/" {
		fixed := *u
		fixed.Path, fixed.RawPath = "", ""
		v.add(name, fmt.Sprintf("%s=%s has a path %s, which %s:// ignores (only ws:// and wss:// use one): remove it, like %s",
			name, Quote(redactURL(s)), Quote(u.Path), u.Scheme, Clip(fixed.Redacted())))
	}
	return isTLS
}

// bracketIPv6 reports whether u's host is an IPv6 address written without
// brackets (tcp://::1:1883), which the dialer refuses with "too many
// colons", and returns u with the brackets put in. A last group that reads
// as a port (decimal, after an address) is taken as the port.
func bracketIPv6(u *url.URL) (string, bool) {
	if strings.HasPrefix(u.Host, "[") || strings.Count(u.Host, ":") < 2 {
		return "", false
	}
	host, port := u.Host, ""
	if i := strings.LastIndex(host, ":"); net.ParseIP(host[:i]) != nil {
		if n, err := strconv.Atoi(host[i+1:]); err == nil && n >= 1 && n <= 65535 {
			host, port = host[:i], host[i:]
		}
	}
	if net.ParseIP(host) == nil {
		return "", false
	}
	fixed := *u
	fixed.Host = "[" + host + "]" + port
	return fixed.Redacted(), true
}

// topicBase checks a topic prefix: not empty, no wildcards, no leading or
// trailing slash, no empty level.
func (v *validator) topicBase(name, s, example string) {
	if !v.topicName(name, s, example) {
		return
	}
	if strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		v.add(name, fmt.Sprintf("%s=%s starts or ends with /: remove it, like %s", name, Quote(s), example))
	}
}

// topicName checks a topic one may publish to: not empty, no + or #, no
// empty level inside, no NUL or control character.
func (v *validator) topicName(name, s, example string) bool {
	switch {
	case strings.TrimSpace(s) == "":
		v.add(name, fmt.Sprintf("%s is empty: set a topic like %s", name, example))
	case strings.ContainsAny(s, "+#"):
		v.add(name, fmt.Sprintf("%s=%s contains the wildcard + or #: use a plain topic like %s", name, Quote(s), example))
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		v.add(name, fmt.Sprintf("%s=%s contains a control character: use a plain topic like %s", name, Quote(s), example))
	case strings.Contains(strings.Trim(s, "/"), "//"):
		v.add(name, fmt.Sprintf("%s=%s has an empty level (//): use a topic like %s", name, Quote(s), example))
	default:
		return true
	}
	return false
}

// hostPort checks a listen address host:port (host may be empty, port 0
// picks a free one).
func hostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("is not host:port")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return errors.New("has a port that is not 0 to 65535")
	}
	return nil
}

// readFile reads a (non-secret) file named by variable name.
func readFile(name, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s cannot be read (%w): check the path and that the daemon's user may read it", name, Clip(path), unwrapPath(err))
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// isToken reports whether s is an HTTP header name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
