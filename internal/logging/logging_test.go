package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestFormats(t *testing.T) {
	cases := []struct {
		format     string
		isTerminal bool
		wantJSON   bool
		wantColour bool
	}{
		{"auto", false, true, false},
		{"auto", true, false, true},
		{"json", true, true, false},
		{"JSON", false, true, false},
		{"console", false, false, false},
		{"console", true, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.format+map[bool]string{true: "/terminal", false: "/pipe"}[tc.isTerminal], func(t *testing.T) {
			var buf bytes.Buffer
			log, err := NewFor(&buf, "info", tc.format, Where{Terminal: tc.isTerminal})
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("device", "h6072_aabbccddeeff1001").Msg("state changed")
			out := buf.String()

			var obj map[string]any
			isJSON := json.Unmarshal(buf.Bytes(), &obj) == nil
			if isJSON != tc.wantJSON {
				t.Fatalf("JSON = %v, want %v: %q", isJSON, tc.wantJSON, out)
			}
			if hasColour := strings.Contains(out, "\x1b["); hasColour != tc.wantColour {
				t.Errorf("colour = %v, want %v: %q", hasColour, tc.wantColour, out)
			}
			if tc.wantJSON {
				if obj["level"] != "info" || obj["message"] != "state changed" || obj["device"] != "h6072_aabbccddeeff1001" {
					t.Errorf("fields: %v", obj)
				}
				ts, _ := obj["time"].(string)
				if _, err := time.Parse(time.RFC3339, ts); err != nil {
					t.Errorf("time %q is not RFC 3339: %v", ts, err)
				}
				return
			}
			for _, want := range []string{"state changed", "device=", "h6072_aabbccddeeff1001", "INF"} {
				if !strings.Contains(out, want) {
					t.Errorf("console output lacks %q: %q", want, out)
				}
			}
			// The console line starts with a date and time.
			if _, err := time.Parse(time.DateTime, stripANSI(out)[:len(time.DateTime)]); err != nil {
				t.Errorf("console line does not start with a timestamp: %q", out)
			}
		})
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestLevels(t *testing.T) {
	for _, level := range []string{"trace", "debug", "info", "warn", "error", "WARN", " debug "} {
		var buf bytes.Buffer
		log, err := NewFor(&buf, level, "json", Where{})
		if err != nil {
			t.Fatalf("%q: %v", level, err)
		}
		log.Trace().Msg("trace")
		log.Debug().Msg("debug")
		log.Info().Msg("info")
		log.Warn().Msg("warn")
		log.Error().Msg("error")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var obj map[string]any
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			got = append(got, obj["message"].(string))
		}
		want := levels[indexOf(levels, strings.ToLower(strings.TrimSpace(level))):]
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("LOG_LEVEL=%s logged %v, want %v", level, got, want)
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func TestBadSettingsNameTheVariable(t *testing.T) {
	if _, err := NewFor(&bytes.Buffer{}, "verbose", "json", Where{}); err == nil ||
		err.Error() != `logging: LOG_LEVEL="verbose" is not a level: use one of trace, debug, info, warn, error` {
		t.Errorf("bad level: %v", err)
	}
	if _, err := NewFor(&bytes.Buffer{}, "info", "xml", Where{}); err == nil ||
		err.Error() != `logging: LOG_FORMAT="xml" is not a format: use auto, console, json or journal` {
		t.Errorf("bad format: %v", err)
	}
	if _, err := NewFor(&bytes.Buffer{}, "", "json", Where{}); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Errorf("empty level: %v", err)
	}
}

// Two loggers do not share a level (no zerolog globals).
func TestLoggersAreIndependent(t *testing.T) {
	var a, b bytes.Buffer
	la, _ := NewFor(&a, "error", "json", Where{})
	lb, _ := NewFor(&b, "debug", "json", Where{})
	la.Debug().Msg("x")
	lb.Debug().Msg("y")
	if a.Len() != 0 || b.Len() == 0 {
		t.Errorf("a=%q b=%q", a.String(), b.String())
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Error("a pipe is a terminal")
	}
	if IsTerminal(nil) {
		t.Error("nil is a terminal")
	}
	// A real terminal, when the test has one (go test usually does not).
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		if !IsTerminal(tty) {
			t.Error("/dev/tty is not a terminal")
		}
	}
}

// TestDurationsCarryTheirUnit: a duration field reads "1m0s", not zerolog's
// default 60000 milliseconds.
func TestDurationsCarryTheirUnit(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewFor(&buf, "info", FormatJSON, Where{})
	if err != nil {
		t.Fatal(err)
	}
	log.Warn().Dur("holdoff", time.Minute).Dur("elapsed", 1200*time.Microsecond).Msg("x")
	for _, want := range []string{`"holdoff":"1m0s"`, `"elapsed":"1.2ms"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log line %s lacks %s", buf.String(), want)
		}
	}
}
