package addon

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"cloud2mqtt/internal/config"
)

func TestIngressPeer(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "172.30.32.2"},
		{map[string]string{IngressPeerVar: ""}, DefaultIngressPeer},
		{map[string]string{IngressPeerVar: "127.0.0.9"}, "127.0.0.9"},
		{map[string]string{IngressPeerVar: "::ffff:127.0.0.9"}, "127.0.0.9"}, // as a dual-stack listener sees it
		{map[string]string{IngressPeerVar: "::1"}, "::1"},
	} {
		got, err := IngressPeer(c.env)
		if err != nil || got != netip.MustParseAddr(c.want) {
			t.Errorf("%v: %v, %v; want %s", c.env, got, err, c.want)
		}
	}
	long := strings.Repeat("x", 100)
	for _, bad := range []string{"supervisor", "172.30.32.2:80", long} {
		_, err := IngressPeer(map[string]string{IngressPeerVar: bad})
		if err == nil || !strings.Contains(err.Error(), IngressPeerVar) {
			t.Errorf("%.20s: %v, want an error naming %s", bad, err, IngressPeerVar)
		}
		if err != nil && strings.Contains(err.Error(), long) {
			t.Errorf("the error repeats a value of 100 characters: %v", err)
		}
	}
}

// Scrub hides the secrets and the long values, whatever way the message
// quoted them, and keeps the rest and the error's chain.
func TestScrub(t *testing.T) {
	const key = "k3y-Ünïcode\"quoted\tand tabbed"
	longURL := "https://user:pw@" + strings.Repeat("a", 70) + ".example/path"
	longTopic := strings.Repeat("t", 65)
	env := map[string]string{
		"CLOUD_API_KEY":    key,
		"MQTT_PASSWORD":    "pw", // too short to look for
		"CLOUD_BASE_URL":   longURL,
		"MQTT_BASE_TOPIC":  longTopic,
		"LOG_LEVEL":        "loud", // short and no secret: shown
		"SUPERVISOR_TOKEN": "sup-token-1",
		"NOT_A_SETTING":    strings.Repeat("n", 80),
	}
	masked := "https://user:***@" + strings.Repeat("a", 70) + ".example/path" // as the config shows it
	base := errors.New("config: base")
	err := fmt.Errorf("%w\nPOLL_INTERVAL=%q is not a duration\nLOG_LEVEL=%q is not a level\nMQTT_CLIENT_ID=%+q has a control character\n"+
		"CLOUD_BASE_URL=%q has a query\nMQTT_BASE_TOPIC=%s is too long\nX=%q carries %q\nshort %q stays, pw stays",
		base, key, "loud", key, masked, longTopic, "sup-token-1", strings.Repeat("n", 80), "just-64-"+strings.Repeat("6", 56))
	got := Scrub(err, env)
	text := got.Error()
	for _, leak := range []string{"k3y", "quoted", `\u00dc`, strings.Repeat("a", 65), longTopic, "sup-token-1", strings.Repeat("n", 65)} {
		if strings.Contains(text, leak) {
			t.Errorf("the scrubbed error shows %.20q:\n%s", leak, text)
		}
	}
	for _, keep := range []string{"POLL_INTERVAL=\"***\" is not a duration", `LOG_LEVEL="loud"`, "MQTT_CLIENT_ID=\"***\"",
		`CLOUD_BASE_URL="***" has a query`, "MQTT_BASE_TOPIC=*** is too long", "just-64-", "pw stays"} {
		if !strings.Contains(text, keep) {
			t.Errorf("the scrubbed error lacks %q:\n%s", keep, text)
		}
	}
	if !errors.Is(got, base) {
		t.Error("the scrubbed error lost its chain")
	}
	if Scrub(nil, env) != nil {
		t.Error("Scrub(nil) is not nil")
	}
	if plain := errors.New("nothing to hide"); Scrub(plain, env) != plain {
		t.Error("an error with nothing to hide was replaced")
	}
}

// Every secret setting is hidden, whichever it is.
func TestScrubKnowsEverySecret(t *testing.T) {
	for _, v := range config.Vars() {
		if !v.Secret {
			continue
		}
		err := Scrub(fmt.Errorf("X=%q", "secret-of-"+v.Name), map[string]string{v.Name: "secret-of-" + v.Name})
		if strings.Contains(err.Error(), "secret-of-") {
			t.Errorf("%s's value is shown: %v", v.Name, err)
		}
	}
}

func TestLongOptionNameIsNotShown(t *testing.T) {
	long := strings.Repeat("k", 200)
	_, err := ReadOptions(writeOptions(t, `{"`+long+`":1}`))
	if err == nil || strings.Contains(err.Error(), long[:65]) || !strings.Contains(err.Error(), "200 characters, not shown") {
		t.Errorf("an option name of 200 characters: %v", err)
	}
}
