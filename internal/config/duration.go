package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DurationHint is how a valid duration looks, for error messages.
const DurationHint = "seconds (60) or a number with a unit (60s, 1m, 6h)"

// ParseDuration is how the bridge reads every duration, from the
// environment, MQTT options and Home Assistant alike. A plain number is
// seconds, anything else Go's syntax, so 60, "60s" and "1m" are the same.
// The error does not repeat the value; callers name the setting and quote it.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty")
	}
	if isDecimal(s) {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(secs) || math.Abs(secs) >= float64(math.MaxInt64)/float64(time.Second) {
			return 0, errors.New("out of range")
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || repeatsUnit(s) {
		return 0, errors.New("not a duration")
	}
	return d, nil
}

// repeatsUnit reports whether a duration names a unit twice: Go reads
// "60s60s" (a value pasted twice) as 2m, which nobody means.
func repeatsUnit(s string) bool {
	seen := map[string]bool{}
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j] == '.' || s[j] == '+' || s[j] == '-' || (s[j] >= '0' && s[j] <= '9')) {
			j++
		}
		k := j
		for k < len(s) && s[k] != '.' && (s[k] < '0' || s[k] > '9') {
			k++
		}
		if unit := s[j:k]; unit != "" {
			if seen[unit] {
				return true
			}
			seen[unit] = true
		}
		if k == i {
			break
		}
		i = k
	}
	return false
}

// durationError is the one message for a value that is not a duration,
// naming the setting: `POLL_INTERVAL="soon" is not a duration: use ...`.
func durationError(name, value string) error {
	return fmt.Errorf("%s=%s is not a duration: use %s", name, Quote(value), DurationHint)
}

// ParseDurationFor is ParseDuration with the error a user sees, naming the
// setting (a variable such as POLL_INTERVAL, or an option's name).
func ParseDurationFor(name, value string) (time.Duration, error) {
	d, err := ParseDuration(value)
	if err != nil {
		return 0, durationError(name, value)
	}
	return d, nil
}

// isDecimal reports whether s is a plain decimal number, refusing the
// exponents, hex, Inf and NaN that strconv.ParseFloat takes.
func isDecimal(s string) bool {
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	digits, points := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			points++
		default:
			return false
		}
	}
	return digits > 0 && points <= 1
}

// parseEnvDuration is the environment's parser of time.Duration fields
// (caarlos0/env's FuncMap), so the environment reads durations as
// ParseDuration does.
func parseEnvDuration(v string) (any, error) {
	d, err := ParseDuration(v)
	if err != nil {
		return nil, err
	}
	return d, nil
}
