package bridge

import (
	"bytes"
	"strings"

	"cloud2mqtt/internal/capability"
)

// parsePayload reads an MQTT payload as a normalised JSON value when it is one,
// else as trimmed text, so that `on` and `#ff0000` arrive as strings and `40`
// as a number. Bytes that are not UTF-8 become U+FFFD, as in encoding/json.
func parsePayload(b []byte) any {
	t := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(b), []byte("\ufeff")))
	if len(t) > 0 {
		if v, err := capability.Normalize(t); err == nil {
			return v
		}
	}
	return strings.ToValidUTF8(string(t), "\uFFFD")
}
