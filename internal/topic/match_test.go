package topic

import (
	"strings"
	"testing"
)

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		filter, topic string
		want          bool
	}{
		{"c2m/#", "c2m", true}, {"c2m/#", "c2m/a/b", true}, {"c2m/#", "c2mx/a", false}, {"c2m/#", "x/c2m", false},
		{"c2m/+/set/#", "c2m/d/set", true}, {"c2m/+/set/#", "c2m/d/set/b/c", true}, {"c2m/+/set/#", "c2m/d/state", false},
		{"c2m/+/set/#", "c2m//set", true}, {"c2m/+/set/#", "c2m/d", false}, {"c2m/+/availability", "c2m/d/availability", true},
		{"c2m/+/availability", "c2m/d/availability/x", false}, {"a/b", "a/b", true}, {"a/b", "a/b/", false}, {"a/+", "a/", true},
		{"#", "$SYS/x", false}, {"+/x", "$SYS/x", false}, {"$SYS/#", "$SYS/x", true}, {"#", "", true}, {"+", "", true}, {"a", "", false},
	} {
		if got := Matches(c.filter, c.topic); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Matches("c2m/+/segment/+/set/#", "c2m/h6072_aabbcc/segment/3/set") }); n != 0 {
		t.Errorf("matches allocates %v times", n)
	}
}

// FuzzMatches holds Matches to MQTT's rule, written plainly.
func FuzzMatches(f *testing.F) {
	for _, s := range [][2]string{{"c2m/#", "c2m"}, {"c2m/+/set/#", "c2m/d/set/x"}, {"+/+", "a/b/c"}, {"#", "$SYS"}, {"a//#", "a/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, filter, topic string) {
		if strings.Contains(topic, "+") || strings.Contains(topic, "#") {
			return // not a topic
		}
		if i := strings.Index(filter, "#"); i >= 0 && (i != len(filter)-1 || (i > 0 && filter[i-1] != '/')) {
			return // not a filter
		}
		if got, want := Matches(filter, topic), plainMatch(filter, topic); got != want {
			t.Fatalf("Matches(%q, %q) = %v, want %v", filter, topic, got, want)
		}
	})
}

func plainMatch(filter, topic string) bool {
	f, tp := strings.Split(filter, "/"), strings.Split(topic, "/")
	if strings.HasPrefix(topic, "$") && (f[0] == "+" || f[0] == "#") {
		return false
	}
	for i, p := range f {
		if p == "#" {
			return true
		}
		if i >= len(tp) || (p != "+" && p != tp[i]) {
			return false
		}
	}
	return len(f) == len(tp)
}
