package logging

import (
	"bytes"
	"io"
)

// minSecret is the shortest secret Redact hides: shorter ones would blank
// out ordinary words.
const minSecret = 4

// Redact returns a writer that replaces each secret with "***" before writing to
// w, as a last line of defence against a library error quoting the API key. Each
// Write must carry whole log lines, as zerolog's do.
func Redact(w io.Writer, secrets ...string) io.Writer {
	var keep [][]byte
	for _, s := range secrets {
		if len(s) >= minSecret {
			keep = append(keep, []byte(s))
		}
	}
	if len(keep) == 0 {
		return w
	}
	return &redactor{w: w, secrets: keep}
}

type redactor struct {
	w       io.Writer
	secrets [][]byte
}

var stars = []byte("***")

func (r *redactor) Write(p []byte) (int, error) {
	out := p
	for _, s := range r.secrets {
		if bytes.Contains(out, s) {
			out = bytes.ReplaceAll(out, s, stars)
		}
	}
	if _, err := r.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
