package logging

import (
	"bytes"
	"io"
)

// minSecret is the shortest secret Redact hides: shorter ones would blank
// out ordinary words.
const minSecret = 4

// Redact returns a writer that replaces every occurrence of each secret
// with "***" before writing to w. It is the last line of defence: code is
// expected not to log secrets at all (and tests prove it does not), but a
// library error quoting a topic or URL that contains the API key is caught
// here. Each Write must carry whole log lines, as zerolog's writes do.
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
