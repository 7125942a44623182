// Package addon runs the bridge as a Home Assistant app (add-on). It turns
// what the Supervisor provides (the user's options, the Mosquitto app's
// broker, SUPERVISOR_TOKEN) into the environment variables the config
// package reads, so the daemon has one configuration path wherever it runs.
//
// Options are the settings' names in lower case (cloud_api_key is
// CLOUD_API_KEY) and win over the process environment. The state directory
// is /data, which the Supervisor keeps across updates and backups.
//
// It never logs or puts an option's value in an error, so a secret typed
// into the wrong field does not leak; Scrub does the same for the config
// package's errors.
package addon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"cloud2mqtt/internal/config"
)

// The variables the Supervisor sets, and the two a test may set to move the
// options file and the Supervisor's address.
const (
	TokenVar       = "SUPERVISOR_TOKEN"
	APIVar         = "SUPERVISOR_API"
	OptionsFileVar = "ADDON_OPTIONS_FILE"

	DefaultAPI         = "http://supervisor"
	DefaultOptionsFile = "/data/options.json"
	// DataDir is the app's persistent directory, kept by the Supervisor.
	DataDir = "/data"
)

// ErrSupervisor marks a failure to reach the Supervisor or to get a broker
// from it: worth a restart, unlike a mistake in the options.
var ErrSupervisor = errors.New("addon: the Supervisor's MQTT service")

// requestTimeout bounds the one request to the Supervisor.
const requestTimeout = 15 * time.Second

// Active reports whether the process runs as a Home Assistant app.
func Active(environ map[string]string) bool { return environ[TokenVar] != "" }

// Environment returns environ with the app's settings laid over it. Outside
// app mode (no SUPERVISOR_TOKEN) it returns environ unchanged. environ
// itself is not modified. client may be nil for http.DefaultClient.
//
// An error wrapping ErrSupervisor means the broker could not be had from
// the Supervisor; any other error is a problem with the options file.
func Environment(ctx context.Context, environ map[string]string, client *http.Client) (map[string]string, error) {
	if !Active(environ) {
		return environ, nil
	}
	out := make(map[string]string, len(environ)+8)
	for k, v := range environ {
		out[k] = v
	}
	path := environ[OptionsFileVar]
	if path == "" {
		path = DefaultOptionsFile
	}
	opts, err := ReadOptions(path)
	if err != nil {
		return nil, err
	}
	for k, v := range opts {
		out[k] = v
	}
	if opts["STATE_DIR"] == "" {
		// /data is the only directory the Supervisor keeps; an image's
		// own STATE_DIR (a Docker volume path) would be lost on update.
		out["STATE_DIR"] = DataDir
	}
	if opts["LOG_FORMAT"] == "" {
		out["LOG_FORMAT"] = "console"
	}
	if out["MQTT_URL"] != "" {
		return out, nil // the user's broker wins
	}
	api := environ[APIVar]
	if api == "" {
		api = DefaultAPI
	}
	b, err := MQTTService(ctx, client, api, environ[TokenVar])
	if err != nil {
		return nil, err
	}
	out["MQTT_URL"] = b.URL()
	// The service's credentials go with its broker; a password from a file
	// or credential the user set would conflict with MQTT_PASSWORD.
	out["MQTT_USERNAME"] = b.Username
	out["MQTT_PASSWORD"] = b.Password
	delete(out, "MQTT_PASSWORD_FILE")
	return out, nil
}

// ReadOptions reads the Supervisor's options file into environment
// variables; null and "" are left out so the setting keeps its default. An
// unknown key or a list or object value is an error that names the option,
// never its value.
func ReadOptions(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("addon: the app's options: %w (the Supervisor writes this file; %s moves it)", err, OptionsFileVar)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("addon: the app's options in %s are not a JSON object: %w", path, err)
	}
	known := map[string]bool{}
	var names []string // the options, for a hint
	for _, v := range config.Vars() {
		known[v.Name] = true
		names = append(names, strings.ToLower(v.Name))
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	var problems []error
	for _, k := range keys {
		name := strings.ToUpper(k)
		if k != strings.ToLower(k) || !known[name] {
			problems = append(problems, unknownOption(k, names))
			continue
		}
		v, err := optionValue(raw[k])
		if err != nil {
			problems = append(problems, fmt.Errorf("option %s: %w", k, err))
			continue
		}
		if v != "" {
			out[name] = v
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("addon: the app's options: %w", errors.Join(problems...))
	}
	return out, nil
}

// unknownOption is the error for an option that names no setting, with the
// option meant when one is close (pol_interval: poll_interval).
func unknownOption(k string, names []string) error {
	if hint, ok := config.Closest(strings.ToLower(k), names); ok {
		return fmt.Errorf("option %q is not a setting: did you mean %s?", clip(k), hint)
	}
	return fmt.Errorf("option %q is not a setting: use a variable of config.example.env in lower case, like cloud_api_key or poll_interval", clip(k))
}

// optionValue is one option's value as the text of an environment variable.
func optionValue(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case json.Number:
		return v.String(), nil
	}
	return "", errors.New("is a list or an object: give a text, a number or true/false")
}

// Broker is the Supervisor's answer to GET /services/mqtt.
type Broker struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	SSL      bool   `json:"ssl"`
	Username string `json:"username"`
	Password string `json:"password"`
	Protocol string `json:"protocol"`
}

// URL is the broker as an MQTT_URL.
func (b Broker) URL() string {
	scheme := "tcp://"
	if b.SSL {
		scheme = "ssl://"
	}
	return scheme + net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
}

// MQTTService asks the Supervisor at api for the MQTT service's broker.
func MQTTService(ctx context.Context, client *http.Client, api, token string) (Broker, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	url := strings.TrimRight(api, "/") + "/services/mqtt"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Broker{}, fmt.Errorf("%w: %s=%q is not a URL: %v", ErrSupervisor, APIVar, api, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return Broker{}, fmt.Errorf("%w: %v", ErrSupervisor, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Broker{}, fmt.Errorf("%w: reading the answer: %v", ErrSupervisor, err)
	}
	var answer struct {
		Result  string `json:"result"`
		Message string `json:"message"`
		Data    Broker `json:"data"`
	}
	jsonErr := json.Unmarshal(body, &answer)
	const fix = "install and start the Mosquitto broker app (Settings → Apps), or set mqtt_url in this app's options"
	switch {
	case resp.StatusCode == http.StatusOK && jsonErr != nil:
		return Broker{}, fmt.Errorf("%w: GET %s: the answer is not JSON: %v", ErrSupervisor, url, jsonErr)
	case resp.StatusCode != http.StatusOK || answer.Result != "ok":
		msg := answer.Message
		if jsonErr != nil || msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return Broker{}, fmt.Errorf("%w: GET %s answered %d (%s): %s", ErrSupervisor, url, resp.StatusCode, msg, fix)
	case answer.Data.Host == "" || answer.Data.Port <= 0 || answer.Data.Port > 65535:
		return Broker{}, fmt.Errorf("%w: GET %s names no broker (host %q, port %d): %s", ErrSupervisor, url, answer.Data.Host, answer.Data.Port, fix)
	}
	return answer.Data, nil
}
