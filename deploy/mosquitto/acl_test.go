// Package mosquitto holds the tests of cloud2mqtt.acl, the mosquitto ACL
// that leaves the bridge's topics to the bridge (issue 40 §4): here that it
// grants what the bridge's topic layout says, in acl_mosquitto_test.go
// (-tags mosquitto) that a real mosquitto enforces it.
package mosquitto

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"cloud2mqtt/internal/topic"
)

// aclFile is the file users install.
const aclFile = "cloud2mqtt.acl"

// grant is one line of the ACL: who (a user, "" for anonymous clients),
// the access and the filter.
type grant struct{ who, access, filter string }

func readACL(t *testing.T) []grant {
	t.Helper()
	f, err := os.Open(aclFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []grant
	user := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0 || strings.HasPrefix(fields[0], "#"):
		case fields[0] == "user" && len(fields) == 2:
			user = fields[1]
		case fields[0] == "topic" && len(fields) == 3:
			out = append(out, grant{user, fields[1], fields[2]})
		default:
			t.Fatalf("%s: a line this test does not know: %q", aclFile, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestACLGrantsTheLayout: anonymous clients and Home Assistant may read
// the base and write exactly the filters the bridge takes commands on; the
// bridge's user writes the whole base; no other user writes anywhere in it.
func TestACLGrantsTheLayout(t *testing.T) {
	l := topic.New(topic.DefaultBase)
	inbound := l.Inbound()
	slices.Sort(inbound)
	writes, reads := map[string][]string{}, map[string][]string{}
	bridgeOwns := false
	for _, g := range readACL(t) {
		switch {
		case g.who == "cloud2mqtt":
			bridgeOwns = bridgeOwns || g.access == "readwrite" && g.filter == l.Reserved()
		case !overlaps(g.filter, l.Base):
		case g.access == "write":
			writes[g.who] = append(writes[g.who], g.filter)
		case g.access == "read":
			reads[g.who] = append(reads[g.who], g.filter)
		default:
			t.Errorf("%q gets %s on %s, within the bridge's %s", g.who, g.access, g.filter, l.Reserved())
		}
	}
	for _, who := range []string{"", "homeassistant"} {
		slices.Sort(writes[who])
		if !slices.Equal(writes[who], inbound) {
			t.Errorf("%q may write %v; the bridge takes commands on %v", who, writes[who], inbound)
		}
		if !slices.Equal(reads[who], []string{l.Reserved()}) {
			t.Errorf("%q may read %v, want %s", who, reads[who], l.Reserved())
		}
		delete(writes, who)
	}
	for who, w := range writes {
		t.Errorf("user %s may write %v, within the bridge's %s", who, w, l.Reserved())
	}
	if !bridgeOwns {
		t.Errorf("the bridge's user cloud2mqtt may not write %s", l.Reserved())
	}
}

// overlaps reports whether a filter can match a topic under base.
func overlaps(filter, base string) bool {
	first, _, _ := strings.Cut(filter, "/")
	return first == base || first == "+" || first == "#"
}
