package mqtt

import (
	"errors"
	"strings"
)

// checkTopic accepts a topic name one may publish to.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("topic is empty")
	case strings.ContainsAny(t, "+#"):
		return errors.New("topic must not contain the wildcards + or #")
	case strings.ContainsRune(t, 0):
		return errors.New("topic must not contain a NUL character")
	case len(t) > 65535:
		return errors.New("topic is longer than 65535 bytes")
	}
	return nil
}

// checkFilter accepts a subscription filter: '+' and '#' only as whole
// levels, '#' only last.
func checkFilter(f string) error {
	if f == "" {
		return errors.New("filter is empty")
	}
	if strings.ContainsRune(f, 0) {
		return errors.New("filter must not contain a NUL character")
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		if strings.ContainsAny(l, "+#") && len(l) > 1 {
			return errors.New("wildcards + and # must fill a whole level, as in a/+/b or a/#")
		}
		if l == "#" && i != len(levels)-1 {
			return errors.New("# must be the last level")
		}
	}
	return nil
}
