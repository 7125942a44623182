// Package config is the daemon's configuration. Every setting comes from an
// environment variable, parsed from an injected map so tests and -check
// never touch the process environment; secrets may also come from files or
// systemd credentials. Validate names the variable and the fix of every
// problem at once.
//
// The struct tags are the one description of each setting. Vars, the
// example file, the app's options, the run-time options and the redacted
// printouts are all derived from them.
//
// It is not for flags and connects to nothing; building clients is the
// bridge's job.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is every setting of the daemon. Build it with Load, set Demo from the
// flag, then call Validate.
//
// Each field's tags are the one description of its setting:
//   - env, envDefault: the variable and its default (caarlos0/env reads it);
//   - doc: its one line of meaning (config.example.env, -help); group, on
//     a group: the heading its settings are listed under;
//   - min or choice, and invalid: the least value, or the words it may be
//     (in any case), and what the error says after NAME=value when it
//     breaks that rule (Validate, Set; rules.go); alias, with choice: other
//     words taken as one of them (warning=warn), stored as that one;
//   - option: its name when it may be changed at run time over MQTT
//     (internal/settings), then after a comma what to send instead of a
//     value that does not parse;
//   - app: the Home Assistant app's option for it (config.yaml, generated):
//     its schema type when not its kind's (url), ",shown" when the app's
//     form shows it, "-" when the app has none;
//   - redact:"url": a password in it is hidden when it is printed.
//
// A rule a tag cannot state is in validate.go.
type Config struct {
	Cloud  Cloud         `group:"Cloud API"`
	Poll   Poll          `group:"Polling"`
	Local  Local         `group:"Local control (the vendor's LAN interface)"`
	Limits Limits        `group:"Rate limits (the cloud's documented table; lower them when other apps share the account)"`
	MQTT   MQTT          `group:"MQTT"`
	HA     HomeAssistant `group:"Home Assistant"`
	HTTP   HTTP          `group:"HTTP"`
	Log    Log           `group:"Logging"`
	State  State         `group:"State directory"`

	// Demo is set by the -demo flag, never from the environment. The daemon
	// then runs against its built-in simulated cloud and needs no cloud settings.
	Demo bool `env:"-"`

	// Where each secret came from, for Table: "" (unset), the variable's name,
	// or "systemd credential <name>".
	apiKeySource    string
	passwordSource  string
	httpTokenSource string
	// unparsed are the variables Load could not parse or read, so Validate
	// does not report them again; the value is the raw text, "" for secrets.
	unparsed map[string]string
	// unknown are the environment's variables that look like settings but
	// are none (UnknownVars).
	unknown []UnknownVar
	// warnings are what Load took differently from how it was written
	// (Warnings).
	warnings []string
}

// Cloud is how to reach the vendor's cloud API.
type Cloud struct {
	BaseURL    string        `env:"CLOUD_BASE_URL" redact:"url" app:"url,shown" doc:"Base address of the cloud API, scheme and host only, like https://host (the bridge appends /router/api/v1/...); required unless -demo"`
	APIKey     Secret        `env:"CLOUD_API_KEY" app:",shown" doc:"API key for the cloud (secret); or CLOUD_API_KEY_FILE, or the systemd credential cloud_api_key"`
	APIKeyFile string        `env:"CLOUD_API_KEY_FILE" app:"-" doc:"File holding the API key (absolute path; trailing newlines are ignored); not together with CLOUD_API_KEY"`
	KeyHeader  string        `env:"CLOUD_API_KEY_HEADER" envDefault:"Service-API-Key" doc:"HTTP header that carries the API key"`
	Timeout    time.Duration `env:"CLOUD_TIMEOUT" envDefault:"10s" min:"1ns" invalid:"must be positive, like 10s" doc:"Timeout of one cloud request"`
	EventsURL  string        `env:"CLOUD_EVENTS_URL" redact:"url" doc:"Cloud event stream, mqtts://host:8883 style; empty = events off"`
	DailyLimit int           `env:"CLOUD_DAILY_LIMIT" envDefault:"0" min:"0" invalid:"is negative: set the most requests per day, or 0 for no daily limit" option:"daily_limit,send the most requests per day, or 0 for no daily limit" app:",shown" doc:"Most cloud requests per day (the account's quota); 0 = none set (the quota the cloud's answers tell is still planned within)"`
}

// Poll is how often the daemon reads from the cloud on its own.
type Poll struct {
	Interval           time.Duration `env:"POLL_INTERVAL" envDefault:"60s" min:"2s" invalid:"is below the 2s floor (the cloud allows 30 state reads per minute per device)" option:"poll_interval" app:",shown" doc:"How often each device's state is read; at least 2s (the cloud allows 30 state reads per minute per device), rounded up to whole seconds (reads are sent in batches once a second)"`
	DeviceListInterval time.Duration `env:"DEVICE_LIST_INTERVAL" envDefault:"10m" min:"1m" invalid:"is below the 1m floor (the device list budget is shared by the whole account)" option:"device_list_interval" doc:"How often the device list is read to find added or removed devices; at least 1m"`
	SceneInterval      time.Duration `env:"SCENE_INTERVAL" envDefault:"6h" min:"1m" invalid:"is below the 1m floor (scene lists rarely change; the bridge/request/scenes request reads them on demand)" option:"scene_interval" doc:"How often each light's scene lists are read; at least 1m"`
	QuietFactor        int           `env:"POLL_QUIET_FACTOR" envDefault:"4" min:"1" invalid:"is below 1: use 1 to read every device at the planned interval (adaptive polling off), or more to let quiet devices wait that many intervals" doc:"Adaptive polling: the devices that change often are read more often and quiet ones less, with as many requests in all, a quiet one at least every POLL_QUIET_FACTOR planned intervals; 1 = off (every device at the planned interval)"`
}

// Local is the vendor's LAN interface beside the cloud. ListenAddr and
// ScanTargets stay text here because package lan parses them.
type Local struct {
	Enabled      bool          `env:"LAN_ENABLED" envDefault:"false" app:",shown" doc:"Control and read the lights that offer the vendor's LAN interface locally (true or false); turn LAN Control on for each light in the vendor's app"`
	ListenAddr   string        `env:"LAN_LISTEN" envDefault:"0.0.0.0:4002" doc:"Address (host:port) the lights' LAN answers arrive at; they always answer to port 4002 of the sender"`
	ScanTargets  string        `env:"LAN_SCAN_TARGETS" envDefault:"239.255.255.250" doc:"Comma-separated hosts or host:port the LAN scan goes to: the multicast group, other subnets' lights or broadcast addresses; a list replaces the default"`
	ScanInterval time.Duration `env:"LAN_SCAN_INTERVAL" envDefault:"5m" min:"1s" invalid:"is below the 1s floor (the floor of the LAN client's scans; minutes are plenty: lights seldom move, and a silent light is found again by its next status answer)" doc:"How often the LAN is scanned for lights; at least 1s"`
	PollInterval time.Duration `env:"LAN_POLL_INTERVAL" envDefault:"10s" min:"100ms" invalid:"is below the 100ms floor (the floor of the LAN client's polls; each light is also paced on its own, since lights drop bursts of datagrams)" doc:"How often each local light's state is read over the LAN (no cloud request); at least 100ms"`
}

// Limits are the cloud's rate limits the scheduler keeps to. The defaults are
// the spec's table; per-minute budgets have a burst equal to the rate.
type Limits struct {
	DevicesPerMinute       int `env:"LIMIT_DEVICES_PER_MINUTE" envDefault:"30" min:"1" invalid:"must be at least 1 (a rate of zero would never send a request): set it to the cloud's limit or lower" doc:"Device list reads per minute for the account"`
	ControlPerSecond       int `env:"LIMIT_CONTROL_PER_SECOND" envDefault:"12" min:"1" invalid:"must be at least 1 (a rate of zero would never send a request): set it to the cloud's limit or lower" doc:"Control commands per second for the account"`
	ControlBurst           int `env:"LIMIT_CONTROL_BURST" envDefault:"80" min:"1" invalid:"must be at least 1 (a burst of zero would never send a request): set it to the cloud's limit or lower" doc:"Control commands the account may send at once"`
	DeviceControlPerSecond int `env:"LIMIT_DEVICE_CONTROL_PER_SECOND" envDefault:"2" min:"1" invalid:"must be at least 1 (a rate of zero would never send a request): set it to the cloud's limit or lower" doc:"Control commands per second for each device"`
	DeviceControlBurst     int `env:"LIMIT_DEVICE_CONTROL_BURST" envDefault:"6" min:"1" invalid:"must be at least 1 (a burst of zero would never send a request): set it to the cloud's limit or lower" doc:"Control commands each device may receive at once"`
	StatePerMinute         int `env:"LIMIT_STATE_PER_MINUTE" envDefault:"30" min:"1" invalid:"must be at least 1 (a rate of zero would never send a request): set it to the cloud's limit or lower" doc:"State reads per minute for each device"`
	ScenesPerMinute        int `env:"LIMIT_SCENES_PER_MINUTE" envDefault:"30" min:"1" invalid:"must be at least 1 (a rate of zero would never send a request): set it to the cloud's limit or lower" doc:"Scene list reads per minute for each device"`
}

// MQTT is the broker connection.
type MQTT struct {
	URL          string `env:"MQTT_URL" envDefault:"tcp://127.0.0.1:1883" redact:"url" doc:"Broker URL: tcp:// (or mqtt://), ssl:// (or mqtts://), ws:// or wss://host:port, or the word embedded for the built-in broker"`
	Listen       string `env:"MQTT_LISTEN" envDefault:"127.0.0.1:1883" app:"-" doc:"Address (host:port) the embedded broker listens on when MQTT_URL=embedded"`
	Username     string `env:"MQTT_USERNAME" doc:"Broker user name; empty = anonymous"`
	Password     Secret `env:"MQTT_PASSWORD" doc:"Broker password (secret); or MQTT_PASSWORD_FILE, or the systemd credential mqtt_password"`
	PasswordFile string `env:"MQTT_PASSWORD_FILE" app:"-" doc:"File holding the broker password (absolute path; trailing newlines are ignored); not together with MQTT_PASSWORD"`
	CAFile       string `env:"MQTT_CA_FILE" doc:"PEM file of the CA(s) the broker's certificate is checked against; empty = the system's CAs"`
	CertFile     string `env:"MQTT_CERT_FILE" doc:"PEM client certificate for TLS client authentication; together with MQTT_KEY_FILE"`
	KeyFile      string `env:"MQTT_KEY_FILE" doc:"PEM private key of MQTT_CERT_FILE"`
	ClientID     string `env:"MQTT_CLIENT_ID" doc:"MQTT client id (at most 256 bytes); empty = a random id made once and kept in STATE_DIR (without STATE_DIR, a new one each run)"`
	BaseTopic    string `env:"MQTT_BASE_TOPIC" envDefault:"cloud2mqtt" doc:"Topic every bridge topic is under; no + or #, no leading or trailing /"`
	// QueuedCommandMaxAge is judged by how long the bridge was away, because
	// MQTT 3.1.1 gives a message no age.
	QueuedCommandMaxAge time.Duration `env:"MQTT_QUEUED_COMMAND_MAX_AGE" envDefault:"2m" min:"0s" invalid:"is negative: use a duration like 2m, or 0 to carry out no command the broker kept while the bridge was offline" doc:"Commands the broker kept for the bridge while it was offline are carried out only if it was offline at most this long, else dropped with a warning (MQTT gives them no age); after a restart that needs STATE_DIR, without it they are dropped; 0 = always dropped"`
}

// HomeAssistant is the MQTT discovery for Home Assistant.
type HomeAssistant struct {
	Discovery       bool   `env:"HA_DISCOVERY" envDefault:"true" doc:"Publish Home Assistant MQTT discovery configs (true or false)"`
	DiscoveryPrefix string `env:"HA_DISCOVERY_PREFIX" envDefault:"homeassistant" doc:"Home Assistant's discovery prefix"`
	StatusTopic     string `env:"HA_STATUS_TOPIC" envDefault:"homeassistant/status" doc:"Home Assistant's birth topic; discovery is sent again when it says online"`
}

// HTTP is the optional HTTP endpoint (status page, health and metrics).
type HTTP struct {
	Addr      string `env:"HTTP_ADDR" doc:"Address (host:port) of the HTTP endpoint: the status page at /, /healthz and /metrics; empty = off"`
	Token     Secret `env:"HTTP_TOKEN" doc:"Token the status page's actions need (secret; bearer or the page's login); without it, actions work only when HTTP_ADDR is a loopback address; or HTTP_TOKEN_FILE, or the systemd credential http_token"`
	TokenFile string `env:"HTTP_TOKEN_FILE" app:"-" doc:"File holding HTTP_TOKEN (absolute path; trailing newlines are ignored); not together with HTTP_TOKEN"`
	Hosts     string `env:"HTTP_HOSTS" doc:"More names the HTTP endpoint answers to (comma-separated host names, *.domain for its subdomains), e.g. a reverse proxy's; besides these only HTTP_ADDR's own address or name, this machine's host name and loopback names are served (421 otherwise)"`
}

// HostNames is HTTP_HOSTS as a list: lower case, without spaces, empty
// entries or a trailing dot.
func (h HTTP) HostNames() []string {
	var out []string
	for _, n := range strings.Split(h.Hosts, ",") {
		n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Log is the daemon's log output.
type Log struct {
	Level  string `env:"LOG_LEVEL" envDefault:"info" choice:"trace,debug,info,warn,error" alias:"warning=warn" invalid:"is not a level: use one of trace, debug, info, warn, error" option:"log_level" app:",shown" doc:"Log level: trace, debug, info, warn or error"`
	Format string `env:"LOG_FORMAT" envDefault:"auto" choice:"auto,console,json,journal" invalid:"is not a format: use auto (console on a terminal, journal under systemd, json otherwise), console, json or journal" app:"-" doc:"Log format: auto (console on a terminal, journal under systemd, json otherwise), console, json or journal (lines with their syslog priority)"`
}

// State is where the bridge keeps what it knows across restarts.
type State struct {
	Dir string `env:"STATE_DIR" doc:"Directory for the device list, last states, today's request count and options set over MQTT, kept across restarts (absolute path); default: $STATE_DIRECTORY when systemd sets it, else none"`
}

// stateDirectoryVar is set by systemd for a unit with StateDirectory=.
const stateDirectoryVar = "STATE_DIRECTORY"

// The systemd credential names (LoadCredential=<name>:<path> in the unit) the
// secrets are read from when neither the variable nor its *_FILE is set.
const (
	CredentialAPIKey       = "cloud_api_key"
	CredentialMQTTPassword = "mqtt_password"
	CredentialHTTPToken    = "http_token"
)

// credentialsDirectoryVar is set by systemd for a unit with LoadCredential=.
const credentialsDirectoryVar = "CREDENTIALS_DIRECTORY"

// Load parses environ into a Config with the tags' defaults, reading each
// secret from X, else X_FILE, else the systemd credential. It does not call
// Validate; set Demo first.
//
// The error has one line per variable that does not parse. The Config still
// holds every value that did, so errors.Join(err, cfg.Validate()) reports
// all problems at once without repeats.
func Load(environ map[string]string) (Config, error) {
	if environ == nil {
		// A nil Environment makes caarlos0/env read the process environment.
		environ = map[string]string{}
	}
	cfg := Config{unparsed: map[string]string{}, unknown: UnknownVars(environ)}
	var problems []error
	// A file with Windows line endings gives every value a trailing \r;
	// say so once and read the values without it.
	environ, crs := crVars(environ, varNames())
	if len(crs) > 0 {
		problems = append(problems, crError(crs))
	}
	environ, cfg.warnings = quotedVars(environ, varNames())
	exported, names := exportedVars(environ, varNames())
	problems = append(problems, exported...)
	for _, n := range names {
		cfg.unparsed[n] = ""
	}
	opts := env.Options{Environment: environ,
		FuncMap: map[reflect.Type]env.ParserFunc{
			reflect.TypeFor[time.Duration](): parseEnvDuration,
			reflect.TypeFor[bool]():          parseEnvBool,
		}}
	if err := env.ParseWithOptions(&cfg, opts); err != nil {
		problems = append(problems, parseProblems(err, environ, cfg.unparsed)...)
	}
	cfg.aliases()

	if cfg.State.Dir == "" {
		// systemd gives a list when StateDirectory= names several.
		cfg.State.Dir, _, _ = strings.Cut(environ[stateDirectoryVar], ":")
	}

	credDir := environ[credentialsDirectoryVar]
	key, src, err := cfg.loadSecret(environ, "CLOUD_API_KEY", "CLOUD_API_KEY_FILE", credDir, CredentialAPIKey)
	if err != nil {
		problems = append(problems, err)
		cfg.unparsed["CLOUD_API_KEY"] = ""
	}
	cfg.Cloud.APIKey, cfg.apiKeySource = Secret(key), src

	pw, src, err := cfg.loadSecret(environ, "MQTT_PASSWORD", "MQTT_PASSWORD_FILE", credDir, CredentialMQTTPassword)
	if err != nil {
		problems = append(problems, err)
		cfg.unparsed["MQTT_PASSWORD"] = ""
	}
	cfg.MQTT.Password, cfg.passwordSource = Secret(pw), src

	tok, src, err := cfg.loadSecret(environ, "HTTP_TOKEN", "HTTP_TOKEN_FILE", credDir, CredentialHTTPToken)
	if err != nil {
		problems = append(problems, err)
		cfg.unparsed["HTTP_TOKEN"] = ""
	}
	cfg.HTTP.Token, cfg.httpTokenSource = Secret(tok), src

	if len(problems) > 0 {
		return cfg, fmt.Errorf("config: %w", errors.Join(problems...))
	}
	return cfg, nil
}

// parseProblems turns caarlos0/env's errors into lines that name the variable
// and say what a valid value looks like, and marks those variables unparsed.
func parseProblems(err error, environ map[string]string, unparsed map[string]string) []error {
	byField := fieldVars()
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []error{err}
	}
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			out = append(out, e)
			continue
		}
		name, ok := byField[pe.Name]
		if !ok {
			out = append(out, e)
			continue
		}
		unparsed[name] = environ[name]
		want := "a valid value"
		switch pe.Type {
		case reflect.TypeFor[time.Duration]():
			out = append(out, durationError(name, environ[name]))
			continue
		case reflect.TypeFor[int]():
			want = "a whole number"
		case reflect.TypeFor[bool]():
			want = boolHint
		}
		out = append(out, notA(name, environ[name], want))
	}
	return out
}

// loadSecret resolves one secret from the variable, else the file named by
// fileVar, else the systemd credential; setting both variable and file is
// an error so nobody wonders which is used. A file loses its trailing
// newlines and wrapping quotes. Errors never show the secret or the file
// variable's value, which may be a key pasted into the wrong variable.
func (c *Config) loadSecret(environ map[string]string, v, fileVar, credDir, cred string) (value, source string, err error) {
	direct, file := environ[v], environ[fileVar]
	switch {
	case direct != "" && file != "":
		return "", "", fmt.Errorf("%s and %s are both set: set only one of them", v, fileVar)
	case direct != "":
		return direct, v, nil
	case file != "":
		if !filepath.IsAbs(file) {
			return "", "", fmt.Errorf("%s is not an absolute path (its value is not shown, in case it is the secret itself): set it to the file's full path", fileVar)
		}
		s, err := readSecretFile(file)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w: check the path and that the daemon's user may read the file", fileVar, err)
		}
		if u, ok := unquote(s); ok {
			s = u
			c.warnings = append(c.warnings, quotedFileWarning("the file "+fileVar+" names"))
		}
		return s, fileVar, nil
	case credDir != "":
		path := filepath.Join(credDir, cred)
		s, err := readSecretFile(path)
		// An empty credential is none: the unit's stand-in for an api_key file the user did not make.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errEmptySecret) {
			return "", "", nil
		}
		if err != nil {
			return "", "", fmt.Errorf("systemd credential %s (for %s): %w: check LoadCredential=%s:<file> in the unit", cred, v, err, cred)
		}
		if u, ok := unquote(s); ok {
			s = u
			c.warnings = append(c.warnings, quotedFileWarning("systemd credential "+cred+" (for "+v+")"))
		}
		return s, "systemd credential " + cred, nil
	}
	return "", "", nil
}

var errEmptySecret = errors.New("the file is empty")

// readSecretFile reads a secret file, trimmed of its trailing line breaks.
// Its errors do not repeat the path.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("cannot read the file: %w", pe.Err)
		}
		return "", fmt.Errorf("cannot read the file: %w", err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", errEmptySecret
	}
	return s, nil
}

// Warnings are what Load took other than as written, such as a value
// without its quotes, naming the variable but never the value.
func (c Config) Warnings() []string { return slices.Clone(c.warnings) }

// APIKeySource says where the API key came from: "" when unset, else the
// variable's name or "systemd credential cloud_api_key".
func (c Config) APIKeySource() string { return c.apiKeySource }

// PasswordSource says where the MQTT password came from, like APIKeySource.
func (c Config) PasswordSource() string { return c.passwordSource }

// HTTPTokenSource says where HTTP_TOKEN came from, like APIKeySource.
func (c Config) HTTPTokenSource() string { return c.httpTokenSource }

// Embedded reports whether MQTT_URL asks for the built-in broker.
func (c Config) Embedded() bool { return strings.EqualFold(c.MQTT.URL, EmbeddedBroker) }

// EmbeddedBroker is the MQTT_URL value that starts the built-in broker on
// MQTT_LISTEN instead of connecting to an external one.
const EmbeddedBroker = "embedded"
