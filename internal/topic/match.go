package topic

import "strings"

// Matches reports whether topic t matches an MQTT filter. It allocates
// nothing because it runs for every publish.
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
