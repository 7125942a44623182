package bridge

import (
	"bytes"
	"strings"

	"cloud2mqtt/internal/capability"
)

// parsePayload reads an MQTT payload: the normalised JSON value when the
// trimmed bytes are one JSON value, else the trimmed text, so that `on`,
// `#ff0000` and `Sunrise` arrive as strings and `40` or `{"r":255,…}` as
// JSON. An empty payload is the empty string; bytes that are not UTF-8
// become U+FFFD, as encoding/json does inside JSON strings.
func parsePayload(b []byte) any {
	t := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(b), []byte("\ufeff")))
	if len(t) > 0 {
		if v, err := capability.Normalize(t); err == nil {
			return v
		}
	}
	return strings.ToValidUTF8(string(t), "\uFFFD")
}
