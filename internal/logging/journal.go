package logging

import (
	"bytes"
	"io"
	"sync"

	"github.com/rs/zerolog"
)

// journalWriter writes each event as one plain line prefixed with its
// syslog priority, as systemd's journal reads a service's output.
type journalWriter struct {
	out io.Writer

	mu  sync.Mutex
	buf bytes.Buffer
}

// priority is the syslog priority of a level (sd-daemon(3)).
func priority(l zerolog.Level) string {
	switch l {
	case zerolog.TraceLevel, zerolog.DebugLevel:
		return "<7>"
	case zerolog.InfoLevel, zerolog.NoLevel:
		return "<6>"
	case zerolog.WarnLevel:
		return "<4>"
	case zerolog.ErrorLevel:
		return "<3>"
	default: // fatal, panic
		return "<2>"
	}
}

func (j *journalWriter) Write(p []byte) (int, error) { return j.WriteLevel(zerolog.NoLevel, p) }

// WriteLevel writes the event (zerolog's JSON) as "<N>LVL message key=value".
func (j *journalWriter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Reset()
	j.buf.WriteString(priority(l))
	cw := zerolog.ConsoleWriter{Out: &j.buf, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}}
	if _, err := cw.Write(p); err != nil {
		return 0, err
	}
	if _, err := j.out.Write(j.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
