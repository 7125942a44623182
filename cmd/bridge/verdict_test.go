package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/testkit"
)

// One verdict (issue 41 §3): a setting problem is an error or a warning
// once, and -check and the daemon say it in the same words at the same
// level. An error: a FAIL line and exit 1 of -check, and the daemon
// refuses to start (exit 78) listing it. A warning: a warn line of
// -check, which exits 0, and a warning the daemon logs as it runs on.

type verdictCase struct {
	name string
	// env is laid over a working setup as in the newcomer's cases;
	// {file} is a file that exists.
	env map[string]string
	// sim is the simulated cloud's options (its quota).
	sim cloudsim.Options
	// subject is -check's line's subject, words what both say.
	subject, words string
	fail           bool // an error; else a warning
	checkOnly      bool // the daemon says it later than a test waits
}

// windowStart is a simulator's clock standing at after past the start of a
// quota window of span: -check's comparison does not hang on the time of
// day the test runs at.
func windowStart(span, after time.Duration) func() time.Time {
	at := time.Now().Truncate(span).Add(span + after)
	return func() time.Time { return at }
}

func verdictCases() []verdictCase {
	return []verdictCase{
		{name: "a daily limit too low for the devices", env: map[string]string{"CLOUD_DAILY_LIMIT": "100"}, subject: "daily limit",
			words: "CLOUD_DAILY_LIMIT=100 is too low for 16 devices even at one read a day: the bridge reads each device at most once a day; raise CLOUD_DAILY_LIMIT, or lengthen DEVICE_LIST_INTERVAL and SCENE_INTERVAL"},
		{name: "a day's quota too small for POLL_INTERVAL", env: map[string]string{"POLL_INTERVAL": "2s"}, subject: "quota",
			sim: cloudsim.Options{Quota: cloudsim.Quota{Limit: 10000, Window: 24 * time.Hour}, Now: windowStart(24*time.Hour, 0)},
			// The interval that fits is worked out from what each saw of
			// the quota: the words around it are the same.
			words: "the cloud's quota allows a read of each device about every "},
		// The daemon learns a short window's length when it renews (a
		// minute or more: poller/quota.go); -check compares what is left
		// until then, once.
		{name: "a quota of 45 per 180 s", subject: "quota", checkOnly: true,
			sim:   cloudsim.Options{ShortQuota: cloudsim.Quota{Limit: 45, Window: 180 * time.Second}, Now: windowStart(180*time.Second, time.Second)},
			words: "the cloud's quota allows a read of each device about every "},
		{name: "STATE_DIR naming a file", env: map[string]string{"STATE_DIR": "{file}"}, subject: "configuration", fail: true,
			words: "STATE_DIR={file} is a file, not a directory: set it to a directory the bridge's user may write, like /var/lib/cloud2mqtt"},
		{name: "a password under another program's name", env: map[string]string{"MQTT_PASS": "x"}, subject: "configuration",
			words: "MQTT_PASS is not a setting of cloud2mqtt and is ignored: did you mean MQTT_PASSWORD?"},
		{name: "a password without a user", env: map[string]string{"MQTT_PASSWORD": "x"}, subject: "configuration", fail: true,
			words: "MQTT_PASSWORD is set but MQTT_USERNAME is empty: MQTT sends a password only with a user name, so set MQTT_USERNAME"},
		{name: "a value in quotes", env: map[string]string{"POLL_INTERVAL": `"60s"`}, subject: "configuration",
			words: "POLL_INTERVAL is wrapped in quotes: they were removed and the value inside is used"},
		{name: "a broker URL of the web", env: map[string]string{"MQTT_URL": "http://127.0.0.1:{closed}"}, subject: "configuration", fail: true,
			words: `MQTT_URL="http://127.0.0.1:{closed}" has scheme "http": use tcp://, mqtt://, ssl://, mqtts://, tls://, ws:// or wss://, like tcp://127.0.0.1:1883`},
		{name: "a duration that is none", env: map[string]string{"POLL_INTERVAL": "soon"}, subject: "configuration", fail: true,
			words: `POLL_INTERVAL="soon" is not a duration: use seconds (60) or a number with a unit (60s, 1m, 6h)`},
	}
}

// TestOneVerdict runs each case through -check and through the daemon, as
// cmd/bridge's run, and holds them to the same words at the same level.
func TestOneVerdict(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(file, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range verdictCases() {
		t.Run(tc.name, func(t *testing.T) {
			sim := cloudsim.New(tc.sim)
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			subst := holdPorts(t)
			subst["{file}"] = file
			env := map[string]string{"CLOUD_BASE_URL": srv.URL, "CLOUD_API_KEY": sim.APIKey(), "MQTT_URL": "embedded",
				"MQTT_LISTEN": "127.0.0.1:0", "CLOUD_TIMEOUT": "5s", "LOG_FORMAT": "json"}
			for k, v := range tc.env {
				env[k] = replaceAll(v, subst)
			}
			words := replaceAll(tc.words, subst)

			code, out, _ := runBridge(t, env, "-check")
			if strings.Contains(out, "%!") {
				t.Errorf("a formatting artefact:\n%s", out)
			}
			mark, wantCode := "warn", 0
			if tc.fail {
				mark, wantCode = "FAIL", 1
			}
			if code != wantCode {
				t.Errorf("-check exit code %d, want %d\n%s", code, wantCode, out)
			}
			if line := mark + " " + tc.subject + ": " + words; !strings.Contains(out, "\n"+line) {
				t.Errorf("-check does not say %q:\n%s", line, out)
			}
			// One line, one level, about the same thing.
			if strings.Contains(out, "\nok   "+tc.subject+": ") && tc.subject != "configuration" {
				t.Errorf("-check says both ok and %s of %s:\n%s", mark, tc.subject, out)
			}
			if !tc.fail && strings.Contains(out, "\nFAIL") {
				t.Errorf("-check fails beside the warning:\n%s", out)
			}

			if tc.checkOnly {
				return
			}
			if tc.fail {
				code, said := runDaemon(t, env, false, []string{"  " + words}, subst)
				if code != exitConfig {
					t.Errorf("the daemon's exit code %d, want %d\n%s", code, exitConfig, said)
				}
				return
			}
			_, said := runDaemon(t, env, true, []string{words}, subst)
			lines := linesWith(said, words)
			for _, line := range lines {
				if !strings.Contains(line, " level=warn") {
					t.Errorf("the daemon says it at another level than a warning:\n%s", line)
				}
			}
			// A setting's warning is said once, at the start.
			if tc.subject == "configuration" && len(lines) != 1 {
				t.Errorf("the daemon says it %d times, want once:\n%s", len(lines), said)
			}
		})
	}
	// A daemon stopped as soon as it warned may leave paho's wait between
	// connection attempts to end on its own.
	testkit.WaitGoroutinesGone(t, 10*time.Second, "golang.(*client).Connect.func1", "golang.(*client).Disconnect.func1")
}

// reportLine is a line of -check's report: the title, the settings'
// table and the indented details, and the lines of its verdicts.
var reportLine = regexp.MustCompile(`^(cloud2mqtt configuration check|  .*|(ok  |warn|FAIL) .*|)$`)

// TestCheckReportAlone: when the output is not a terminal (JSON logs),
// -check's stdout holds its report and nothing else, and when stdout and
// stderr are one pipe (systemd-run --pipe) what the checks logged follows
// the report instead of breaking into it.
func TestCheckReportAlone(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	// At debug the cloud client logs each request -check makes.
	environ := []string{"CLOUD_BASE_URL=" + srv.URL, "CLOUD_API_KEY=" + sim.APIKey(), "MQTT_URL=embedded",
		"MQTT_LISTEN=127.0.0.1:0", "LOG_LEVEL=debug", "POLL_INTERVALL=1m"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"-check"}, environ, &stdout, &stderr); code != 0 {
		t.Fatalf("-check exit code %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if !reportLine.MatchString(line) {
			t.Errorf("stdout has a line that is not the report's: %q", line)
		}
	}
	if !strings.Contains(stderr.String(), `"message":"cloud request"`) {
		t.Errorf("the checks' logs are lost:\n%s", stderr.String())
	}

	var both bytes.Buffer
	if code := run(ctx, []string{"-check"}, environ, &both, &both); code != 0 {
		t.Fatalf("-check exit code %d:\n%s", code, both.String())
	}
	lines := strings.Split(strings.TrimSuffix(both.String(), "\n"), "\n")
	logged := false
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "{"):
			logged = true
		case logged:
			t.Errorf("a line after the logs: %q\n%s", line, both.String())
		case !reportLine.MatchString(line):
			t.Errorf("a line in the report that is not the report's: %q", line)
		}
	}
	if !logged {
		t.Errorf("no log line after the report:\n%s", both.String())
	}
}
