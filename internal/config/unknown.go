package config

import (
	"fmt"
	"slices"
	"strings"
)

// Prefixes are the first words of the settings' variables. A variable of
// the environment that starts with one of them but names no setting is a
// mistake (POLL_INTERVALL, CLOUD_APIKEY), reported by UnknownVars.
var Prefixes = []string{"CLOUD_", "MQTT_", "HA_", "HTTP_", "LAN_", "LOG_", "POLL_", "STATE_", "LIMIT_", "DEVICE_", "SCENE_"}

// notSettings are variables the daemon or its surroundings use that are not
// settings, such as systemd's, the Supervisor's and Go's, so they are never
// reported as mistakes.
var notSettings = []string{
	// systemd: StateDirectory=, LoadCredential= and the other directories,
	// journal and notification sockets, the watchdog, socket activation.
	stateDirectoryVar, credentialsDirectoryVar, "LOGS_DIRECTORY", "CACHE_DIRECTORY",
	"RUNTIME_DIRECTORY", "CONFIGURATION_DIRECTORY", "JOURNAL_STREAM", "NOTIFY_SOCKET",
	"WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID",
	"LISTEN_FDNAMES", "SYSTEMD_EXEC_PID", "MANAGERPID", "MAINPID", "SERVICE_RESULT", "EXIT_CODE", "EXIT_STATUS",
	// The Home Assistant Supervisor (internal/addon).
	"SUPERVISOR_TOKEN", "SUPERVISOR_API", "HASSIO_TOKEN", "ADDON_OPTIONS_FILE",
	// Go's runtime and the HTTP clients' proxy settings.
	"GOGC", "GOMAXPROCS", "GOMEMLIMIT", "GODEBUG", "GOTRACEBACK",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	// The profiling build (cmd/bridge/pprof.go), and tools/ha-check's
	// (tools/ha-e2e starts the bridge with the developer's environment).
	"C2M_PPROF_ADDR", "C2M_MEMPROFILERATE", "HA_ROOT", "HA_REV", "HA_RELEASE", "HA_CORE_SOURCE",
}

// notSettingPrefixes are families of variables that are not settings.
// CLOUD_SDK_ is the Google Cloud SDK's (its images set CLOUD_SDK_VERSION).
var notSettingPrefixes = []string{"ADDON_", "GO", "C2M_", "CLOUD2MQTT_", "CLOUD_SDK_", "HA_CHECK_", "SYSTEMD_", "LC_", "XDG_"}

// UnknownVar is a variable that looks like a setting but is none, so the
// daemon ignores it: it has one of Prefixes or is near a setting's name.
type UnknownVar struct {
	Name       string // the variable as set (at most 64 characters shown)
	Suggestion string // the setting it is closest to, "" when none is close
	// Note says more about Suggestion, for names of another program's
	// settings (MQTT_HOST: the host goes in MQTT_URL).
	Note string
	// Family lists the settings of its prefix when none is close
	// (MQTT_QOS: MQTT_URL, MQTT_LISTEN, ...).
	Family []string
}

// String is the message for the variable, at start and in -check. It never
// shows the value, which may be a secret under a wrong name.
func (u UnknownVar) String() string {
	msg := fmt.Sprintf("%s is not a setting of cloud2mqtt and is ignored", clipName(u.Name))
	switch {
	case u.Suggestion != "" && strings.EqualFold(u.Suggestion, u.Name):
		return msg + ": variable names are upper case: did you mean " + u.Suggestion + "?"
	case u.Suggestion != "" && u.Note != "":
		return msg + ": did you mean " + u.Suggestion + "? (" + u.Note + ")"
	case u.Suggestion != "":
		return msg + ": did you mean " + u.Suggestion + "?"
	case len(u.Family) > 0:
		return msg + ": the settings starting with " + familyPrefix(u.Name) + " are " + strings.Join(u.Family, ", ") + " (config.example.env lists every setting)"
	}
	return msg + " (config.example.env lists every setting)"
}

// synonym is the setting for a name other programs use, and a note.
type synonym struct{ name, note string }

const (
	inMQTTURL = "the host and port go in the URL, like tcp://192.168.1.10:1883"
	inHTTPAdr = "the host and port go in it, like 127.0.0.1:8080"
)

// synonyms are names other programs' settings have, and ours.
var synonyms = map[string]synonym{
	"MQTT_HOST": {"MQTT_URL", inMQTTURL}, "MQTT_PORT": {"MQTT_URL", inMQTTURL},
	"MQTT_BROKER": {"MQTT_URL", inMQTTURL}, "MQTT_SERVER": {"MQTT_URL", inMQTTURL},
	"MQTT_TOPIC": {"MQTT_BASE_TOPIC", ""}, "MQTT_PREFIX": {"MQTT_BASE_TOPIC", ""},
	"HTTP_PORT": {"HTTP_ADDR", inHTTPAdr}, "HTTP_HOST": {"HTTP_ADDR", inHTTPAdr}, "HTTP_LISTEN": {"HTTP_ADDR", inHTTPAdr},
	"CLOUD_KEY": {"CLOUD_API_KEY", ""}, "CLOUD_TOKEN": {"CLOUD_API_KEY", ""},
	"CLOUD_URL": {"CLOUD_BASE_URL", ""}, "CLOUD_HOST": {"CLOUD_BASE_URL", ""},
	"POLL_RATE": {"POLL_INTERVAL", ""}, "POLL_PERIOD": {"POLL_INTERVAL", ""},
	"HA_PREFIX": {"HA_DISCOVERY_PREFIX", ""}, "STATE_PATH": {"STATE_DIR", ""},
}

// UnknownVars lists the variables of environ that look like settings but
// are none, in name order (Load keeps them: Config.UnknownVars).
func UnknownVars(environ map[string]string) []UnknownVar {
	var known []string
	isKnown := map[string]bool{}
	for _, v := range Vars() {
		known = append(known, v.Name)
		isKnown[v.Name] = true
	}
	var out []UnknownVar
	for name := range environ {
		if isKnown[name] || isNotSetting(name) {
			continue
		}
		prefixed := slices.ContainsFunc(Prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		u := UnknownVar{Name: name}
		s, close := Closest(name, known)
		if syn, ok := synonyms[strings.ToUpper(name)]; ok && !close {
			s, close, u.Note = syn.name, true, syn.note
		}
		if !prefixed && !close {
			continue
		}
		if close {
			u.Suggestion = s
		} else {
			p := familyPrefix(name)
			for _, k := range known {
				if strings.HasPrefix(k, p) {
					u.Family = append(u.Family, k)
				}
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b UnknownVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// isNotSetting reports whether name is a variable the daemon or its
// surroundings use that is not a setting (notSettings), in any case.
func isNotSetting(name string) bool {
	up := strings.ToUpper(name)
	if slices.Contains(notSettings, up) {
		return true
	}
	return slices.ContainsFunc(notSettingPrefixes, func(p string) bool { return strings.HasPrefix(up, p) })
}

// familyPrefix is the prefix of Prefixes name starts with.
func familyPrefix(name string) string {
	for _, p := range Prefixes {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}

// clipName is a variable's name for a message: the environment is input,
// so a name over 64 characters is cut, saying how long it was.
func clipName(name string) string { return Clip(strings.ToValidUTF8(name, "?")) }

// UnknownVars are the variables of the environment Load was given that
// look like settings but are none: a warning at start, a FAIL line in
// -check.
func (c Config) UnknownVars() []UnknownVar { return slices.Clone(c.unknown) }
