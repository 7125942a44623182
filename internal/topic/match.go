package topic

import "strings"

// Matches is MQTT's filter matching: "+" one level, a trailing "#" the
// level before it and every level below, no wildcard at the first level
// for a topic starting with "$". It allocates nothing: it runs for every
// publish.
func Matches(filter, t string) bool {
	if strings.HasPrefix(t, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		tl, trest, tmore := strings.Cut(t, "/")
		if fl != "+" && fl != tl {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			return frest == "#" // "a/#" matches "a"
		case !fmore:
			return false
		}
		filter, t = frest, trest
	}
}
