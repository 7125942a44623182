package logging

import (
	"bytes"
	"strings"
	"testing"
)

func TestRedactHidesEverySecret(t *testing.T) {
	var buf bytes.Buffer
	w := Redact(&buf, "key-1234", "pw99", "ab") // "ab" is too short to hide
	line := `{"msg":"subscribe to \"GA/key-1234\" failed","pass":"pw99","x":"abc"}` + "\n"
	n, err := w.Write([]byte(line))
	if err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	got := buf.String()
	if strings.Contains(got, "key-1234") || strings.Contains(got, "pw99") {
		t.Errorf("a secret got through: %s", got)
	}
	if !strings.Contains(got, `GA/***`) || !strings.Contains(got, `"abc"`) {
		t.Errorf("redaction changed more or less than the secrets: %s", got)
	}
	if Redact(&buf) != &buf {
		t.Errorf("Redact without secrets should return the writer itself")
	}
}

func TestRedactedLoggerOutput(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewFor(Redact(&buf, "s3cr3t-key"), "info", "json", Where{})
	if err != nil {
		t.Fatal(err)
	}
	log.Error().Str("topic", "GA/s3cr3t-key").Msg("subscribe failed for s3cr3t-key")
	if strings.Contains(buf.String(), "s3cr3t-key") {
		t.Errorf("secret in output: %s", buf.String())
	}
}
