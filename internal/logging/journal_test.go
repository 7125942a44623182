package logging

import (
	"bytes"
	"strings"
	"testing"
)

// TestJournalPriorities: under systemd every line starts with the syslog
// priority of its level, so journalctl -p warning shows warnings and
// errors alone; no colours, no timestamp of our own.
func TestJournalPriorities(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewFor(&buf, "trace", FormatJournal, Where{})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("a debug line")
	log.Info().Str("device", "H6008/AA").Msg("device added")
	log.Warn().Msg("device unreachable")
	log.Error().Msg("the cloud refuses the API key")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"<7>", "<6>", "<4>", "<3>"}
	if len(lines) != len(want) {
		t.Fatalf("lines %q", lines)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) {
			t.Errorf("line %d %q, want it to start with %s", i, l, want[i])
		}
		if strings.Contains(l, "\x1b[") || strings.Contains(l, "2026") || strings.Contains(l, `{"`) {
			t.Errorf("line %d %q has colour, a timestamp or JSON", i, l)
		}
	}
	if !strings.Contains(lines[1], "device added") || !strings.Contains(lines[1], "device=H6008/AA") {
		t.Errorf("info line %q lacks the message or its fields", lines[1])
	}
}

// TestAutoChoosesTheJournal: LOG_FORMAT=auto writes for the journal when
// systemd connects the output to it, for a terminal on a terminal.
func TestAutoChoosesTheJournal(t *testing.T) {
	for _, tc := range []struct {
		where  Where
		prefix string
	}{
		{Where{Journal: true}, "<6>"},
		{Where{}, `{"level":"info"`},
		{Where{Terminal: true, Journal: true}, ""}, // a terminal wins: console
	} {
		var buf bytes.Buffer
		log, err := NewFor(&buf, "info", FormatAuto, tc.where)
		if err != nil {
			t.Fatal(err)
		}
		log.Info().Msg("hello")
		out := buf.String()
		if tc.prefix != "" && !strings.HasPrefix(out, tc.prefix) {
			t.Errorf("%+v: %q, want it to start with %q", tc.where, out, tc.prefix)
		}
		if tc.prefix == "" && (strings.HasPrefix(out, "<") || strings.HasPrefix(out, "{")) {
			t.Errorf("%+v: %q, want console output", tc.where, out)
		}
	}
}
