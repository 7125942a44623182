// Package logging builds the daemon's zerolog logger from LOG_LEVEL and
// LOG_FORMAT: console on a terminal, syslog-prefixed lines under systemd's
// journal, JSON otherwise. Its only global makes duration fields read "1m0s";
// everything else is per logger, so two bridges in one test do not interfere.
// Redact is a last line of defence; the config and the clients redact their own secrets.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// init makes every .Dur field read as "1m0s". zerolog keeps that format in a
// global, so it is set once, before any logger exists.
func init() {
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
}

// The LOG_FORMAT values.
const (
	FormatAuto    = "auto"
	FormatConsole = "console"
	FormatJSON    = "json"
	// FormatJournal starts each line with its syslog priority, so that
	// journalctl -p filters by level; no colour and no timestamp (the journal has its own).
	FormatJournal = "journal"
)

// Levels are the LOG_LEVEL values, most verbose first.
var levels = []string{"trace", "debug", "info", "warn", "error"}

// Levels returns the accepted LOG_LEVEL values.
func Levels() []string { return append([]string(nil), levels...) }

// ParseLevel parses a LOG_LEVEL value, case-insensitively.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info":
		return zerolog.InfoLevel, nil
	case "warn":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("logging: LOG_LEVEL=%q is not a level: use one of %s", s, strings.Join(levels, ", "))
}

// ParseFormat parses a LOG_FORMAT value, case-insensitively, and returns the
// canonical name.
func ParseFormat(s string) (string, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	switch f {
	case FormatAuto, FormatConsole, FormatJSON, FormatJournal:
		return f, nil
	}
	return "", fmt.Errorf("logging: LOG_FORMAT=%q is not a format: use auto, console, json or journal", s)
}

// Where says what the log output is connected to, for LOG_FORMAT=auto.
type Where struct {
	Terminal bool // the output is a terminal (IsTerminal)
	Journal  bool // systemd's journal (JOURNAL_STREAM is set)
}

// NewFor returns a logger writing to w at level in format. Format auto means
// console when where.Terminal, journal under systemd, JSON otherwise. also
// receive every event as a JSON line whatever the format (a Forwarder).
func NewFor(w io.Writer, level, format string, where Where, also ...io.Writer) (zerolog.Logger, error) {
	isTerminal := where.Terminal
	lvl, err := ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	f, err := ParseFormat(format)
	if err != nil {
		return zerolog.Nop(), err
	}
	if f == FormatAuto {
		switch {
		case isTerminal:
			f = FormatConsole
		case where.Journal:
			f = FormatJournal
		default:
			f = FormatJSON
		}
	}
	withAlso := func(w io.Writer) io.Writer {
		if len(also) == 0 {
			return w
		}
		return zerolog.MultiLevelWriter(append([]io.Writer{w}, also...)...)
	}
	if f == FormatJournal {
		return zerolog.New(withAlso(&journalWriter{out: w})).Level(lvl), nil
	}
	if f == FormatConsole {
		w = zerolog.ConsoleWriter{Out: w, NoColor: !isTerminal, TimeFormat: time.DateTime}
	}
	return zerolog.New(withAlso(w)).Level(lvl).With().Timestamp().Logger(), nil
}

// IsTerminal reports whether f is a terminal (a Cygwin/MSYS one included).
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}
