package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The one verdict on the settings: every problem is classified here once,
// an error or a warning, in the words both -check and the daemon use. An
// error stops the daemon at start (exit 78) and is a FAIL line of -check
// (exit 1); a warning is logged at start and is a warn line of -check,
// which still exits 0: the daemon runs, as the words say it does.

// Level is how much a problem weighs.
type Level int

const (
	// Warning: the daemon runs, doing what the words say (an unknown
	// variable is ignored, a quota too small is read as often as it
	// allows).
	Warning Level = iota + 1
	// Error: the daemon refuses to start.
	Error
)

// String is the level as -check marks its line.
func (l Level) String() string {
	if l == Error {
		return "FAIL"
	}
	return "warn"
}

// Problem is one problem of the settings: its level and its words, which
// name the variable and the fix.
type Problem struct {
	Level Level
	Text  string
	// Fields are what a log line of it carries beside the words, in order
	// (the variable, a suggestion, the address), for readers of JSON logs.
	Fields []Field
}

// Field is a named value of a Problem's log line.
type Field struct{ Key, Value string }

// Problems are the configuration's problems, errors first. As an error
// (Err) its text is one problem a line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Text
	}
	return strings.Join(lines, "\n")
}

// Errors are the problems that stop the daemon.
func (ps Problems) Errors() Problems { return ps.at(Error) }

// Warnings are the problems the daemon logs and runs on.
func (ps Problems) Warnings() Problems { return ps.at(Warning) }

func (ps Problems) at(l Level) Problems {
	var out Problems
	for _, p := range ps {
		if p.Level == l {
			out = append(out, p)
		}
	}
	return out
}

// Err is ps as an error (errors.As finds the Problems), nil when there is
// none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// ProblemsOf reads err as problems: the Problems it holds, or each line of
// its text an error (without the package prefix "config: ").
func ProblemsOf(err error) Problems {
	if err == nil {
		return nil
	}
	var ps Problems
	if errors.As(err, &ps) {
		return ps
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimPrefix(line, "config: "); line != "" {
			ps = append(ps, Problem{Level: Error, Text: line})
		}
	}
	return ps
}

// Problems is the verdict on c: loadErr's lines (Load's error) and
// Validate's problems as errors, then as warnings the variables that look
// like settings but are none (UnknownVars: ignored, the daemon runs
// without them) and what Load took other than as written (Warnings).
// others are as Validate's.
func (c Config) Problems(loadErr error, others ...error) Problems {
	ps := ProblemsOf(loadErr)
	ps = append(ps, ProblemsOf(c.Validate(others...))...)
	for _, u := range c.UnknownVars() {
		p := Problem{Level: Warning, Text: u.String(), Fields: []Field{{"variable", Clip(u.Name)}}}
		if u.Suggestion != "" {
			p.Fields = append(p.Fields, Field{"did_you_mean", u.Suggestion})
		}
		ps = append(ps, p)
	}
	for _, w := range c.Warnings() {
		ps = append(ps, Problem{Level: Warning, Text: w})
	}
	return ps
}

// DailyLimitTooLow is the warning when CLOUD_DAILY_LIMIT leaves less than
// one read of each device a day after the device list and the scene lists:
// the daemon still runs, reading each device at most once a day. -check
// and the poller's plan say it in these words.
func DailyLimitTooLow(limit, devices int) string {
	return fmt.Sprintf("CLOUD_DAILY_LIMIT=%d is too low for %d devices even at one read a day: the bridge reads each device at most once a day; "+
		"raise CLOUD_DAILY_LIMIT, or lengthen DEVICE_LIST_INTERVAL and SCENE_INTERVAL", limit, devices)
}

// QuotaSlowsPolling is the warning when the account's quota, as the
// cloud's answers tell it, allows a read of each device only every fit,
// longer than POLL_INTERVAL (configured): the daemon still runs, reading as
// often as the quota allows. -check and the poller's plan say it in these
// words.
func QuotaSlowsPolling(configured, fit time.Duration) string {
	return fmt.Sprintf("the cloud's quota allows a read of each device about every %s, not every %s: the bridge reads that often; "+
		"set POLL_INTERVAL=%s or longer to plan for it, or CLOUD_DAILY_LIMIT to this bridge's share of the quota (other apps on the account spend it too)",
		FormatDuration(fit), FormatDuration(configured), FormatDuration(fit))
}
