package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// hass drives the Home Assistant of tools/ha-check: hass.sh starts
// it fresh (an empty configuration directory); restart keeps the
// configuration, as a user's restart would.
type hass struct {
	script string // hass.sh
	root   string // the chroot
	port   int    // the broker's

	logOffset int64 // how far newLogContains has read
}

// newLogContains tells whether the log lines written since the last call
// contain s.
func (h *hass) newLogContains(s string) bool {
	f, err := os.Open(h.logPath())
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < h.logOffset {
		h.logOffset = 0 // a new log (restart)
	}
	if _, err := f.Seek(h.logOffset, io.SeekStart); err != nil {
		return false
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return false
	}
	h.logOffset += int64(len(b))
	return strings.Contains(string(b), s)
}

func (h *hass) cfgDir() string  { return filepath.Join(h.root, "opt/hacfg") }
func (h *hass) logPath() string { return filepath.Join(h.cfgDir(), "ha.log") }

func (h *hass) start() error {
	cmd := exec.Command(h.script, "start", strconv.Itoa(h.port))
	cmd.Env = append(os.Environ(), "HA_ROOT="+h.root)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ha-e2e: %s start: %w: %s", h.script, err, out)
	}
	return nil
}

func (h *hass) stop() error {
	cmd := exec.Command(h.script, "stop")
	cmd.Env = append(os.Environ(), "HA_ROOT="+h.root)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ha-e2e: %s stop: %w: %s", h.script, err, out)
	}
	return nil
}

// restart starts Home Assistant again on the configuration it left (entity
// registry included), appending to its log; hass.sh stop still stops it.
func (h *hass) restart() error {
	log, err := os.OpenFile(h.logPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("ha-e2e: open the Home Assistant log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command("chroot", h.root, "python3", "/opt/ha-check/run_hass.py")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ha-e2e: restart Home Assistant: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	// hass.sh stop reads the pid where hass.sh start wrote it (common.sh).
	return os.WriteFile(filepath.Join(h.root, "opt/ha-check/hass.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

// regEntity is one entry of Home Assistant's entity registry.
type regEntity struct {
	EntityID   string  `json:"entity_id"`
	UniqueID   string  `json:"unique_id"`
	Platform   string  `json:"platform"`
	DisabledBy *string `json:"disabled_by"`
}

func (h *hass) registryPath() string {
	return filepath.Join(h.cfgDir(), ".storage/core.entity_registry")
}

// registry reads the entity registry file: MQTT entities by unique id. Home
// Assistant writes it about ten seconds after a change, and on shutdown.
func (h *hass) registry() (map[string]regEntity, error) {
	b, err := os.ReadFile(h.registryPath())
	if err != nil {
		return nil, err
	}
	var f struct {
		Data struct {
			Entities []regEntity `json:"entities"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("ha-e2e: entity registry: %w", err)
	}
	out := map[string]regEntity{}
	for _, e := range f.Data.Entities {
		if e.Platform == "mqtt" {
			out[e.UniqueID] = e
		}
	}
	return out, nil
}

// enable clears disabled_by of the given unique ids in the registry file, as
// enabling the entities in the user interface does. Home Assistant must be
// stopped.
func (h *hass) enable(uids map[string]bool) (int, error) {
	b, err := os.ReadFile(h.registryPath())
	if err != nil {
		return 0, fmt.Errorf("ha-e2e: read the entity registry: %w", err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, fmt.Errorf("ha-e2e: entity registry: %w", err)
	}
	data, _ := f["data"].(map[string]any)
	list, _ := data["entities"].([]any)
	n := 0
	for _, e := range list {
		m, _ := e.(map[string]any)
		if uid, _ := m["unique_id"].(string); uids[uid] && m["disabled_by"] != nil {
			m["disabled_by"] = nil
			n++
		}
	}
	out, err := json.Marshal(f)
	if err != nil {
		return 0, fmt.Errorf("ha-e2e: encode the entity registry: %w", err)
	}
	return n, os.WriteFile(h.registryPath(), out, 0o644)
}

// Problems in Home Assistant's log that do not concern the bridge: the
// check's own set-up (no pip, the paho 1.x shim, the automation's dropped
// calls, which serialCall resends, the state stream's task at a restart) and the deprecation notes
// Home Assistant 2025.1 prints when a service call uses the old colour
// temperature arguments the check tries on purpose.
var knownLogLines = []*regexp.Regexp{
	regexp.MustCompile(`\[homeassistant\.bootstrap\] Skipping pip installation`),
	regexp.MustCompile(`Callback API version 1 is deprecated`),
	regexp.MustCompile("Got `(color_temp|kelvin)` argument in `turn_on` service, which is deprecated"),
	// ha-check's automation drops a call while the previous one runs; the
	// check sees the line and sends the call again (serialCall)
	regexp.MustCompile(`\[homeassistant\.components\.automation\.e2e_command_driver\] e2e command driver: Already running`),
	// ha-check's mqtt_statestream (how the check reads states) is still
	// publishing when the check restarts Home Assistant with many entities
	regexp.MustCompile(`coro=<async_setup\.<locals>\._state_publisher\(\) running at .*/mqtt_statestream/__init__\.py:\d+>.* was still running after final writes shutdown stage`),
}

var logLevel = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ (WARNING|ERROR|CRITICAL) `)

// logProblems returns the warning and error lines of Home Assistant's log
// (with their continuation lines) that are not known set-up noise.
func (h *hass) logProblems() ([]string, error) {
	f, err := os.Open(h.logPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	inProblem := false
	for sc.Scan() {
		line := sc.Text()
		if logLevel.MatchString(line) {
			inProblem = true
			for _, k := range knownLogLines {
				if k.MatchString(line) {
					inProblem = false
				}
			}
			if inProblem {
				out = append(out, line)
			}
			continue
		}
		if strings.HasPrefix(line, "20") && len(line) > 24 && line[4] == '-' {
			inProblem = false // the next record
			continue
		}
		if inProblem && len(out) > 0 && len(out[len(out)-1]) < 4000 {
			out[len(out)-1] += "\n" + line
		}
	}
	return out, sc.Err()
}
