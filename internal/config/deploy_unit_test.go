package config

// The systemd unit and the two places its documents let a user give the
// API key: /etc/cloud2mqtt/api_key (a credential) or CLOUD_API_KEY in the
// env file. systemd's part (which credentials a start gets, or whether it
// fails) is played here from the unit's own lines, by the rule of
// systemd.exec(5); the bridge's part is Load and Validate.

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var unitPath = filepath.Join(deployDir, "systemd", "cloud2mqtt.service")

// unitCredentials are the unit's LoadCredential= (id to path) and
// SetCredential= (id to value, C escapes undone as systemd does) lines.
func unitCredentials(t *testing.T) (load map[string]string, set map[string]string) {
	t.Helper()
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	load, set = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		id, arg, _ := strings.Cut(value, ":")
		switch key {
		case "LoadCredential":
			load[id] = arg
		case "SetCredential":
			v, err := strconv.Unquote(`"` + arg + `"`)
			if err != nil {
				t.Fatalf("SetCredential=%s: %v", value, err)
			}
			set[id] = v
		}
	}
	return load, set
}

// credentialsFor is the credentials directory systemd gives a start of the
// unit on a host whose files are hostFiles (path to content), or the reason
// it fails the start: LoadCredential= of a missing file fails it unless a
// SetCredential= of the same id stands in.
func credentialsFor(t *testing.T, hostFiles map[string]string) (dir, failure string) {
	t.Helper()
	load, set := unitCredentials(t)
	dir = t.TempDir()
	for id, v := range set {
		writeFile(t, filepath.Join(dir, id), v)
	}
	for id, path := range load {
		content, ok := hostFiles[path]
		switch {
		case ok:
			writeFile(t, filepath.Join(dir, id), content)
		case !hasKey(set, id):
			return "", "LoadCredential=" + id + ":" + path + ": the file is missing and nothing stands in (exit 243/CREDENTIALS)"
		}
	}
	return dir, ""
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// A user who follows README.Debian (the key in /etc/cloud2mqtt/api_key)
// and one who writes CLOUD_API_KEY in the env file both get a started
// bridge with their key; with neither, systemd starts it and the bridge
// says which setting is missing.
func TestUnitTakesTheKeyFromEitherPlace(t *testing.T) {
	const apiKeyFile = "/etc/cloud2mqtt/api_key"
	cases := []struct {
		name      string
		hostFiles map[string]string
		envFile   map[string]string
		wantKey   string
		wantSrc   string
	}{
		{"api_key file (README.Debian)", map[string]string{apiKeyFile: "key-from-file\n"}, nil, "key-from-file", "systemd credential " + CredentialAPIKey},
		{"CLOUD_API_KEY in the env file, no api_key", nil, map[string]string{"CLOUD_API_KEY": "key-in-env"}, "key-in-env", "CLOUD_API_KEY"},
		{"both: the env file wins", map[string]string{apiKeyFile: "key-from-file\n"}, map[string]string{"CLOUD_API_KEY": "key-in-env"}, "key-in-env", "CLOUD_API_KEY"},
		{"CLOUD_API_KEY_FILE in the env file, no api_key", map[string]string{}, map[string]string{"CLOUD_API_KEY_FILE": "KEYFILE"}, "key-of-key-file", "CLOUD_API_KEY_FILE"},
		{"neither", nil, nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds, failure := credentialsFor(t, tc.hostFiles)
			if failure != "" {
				t.Fatalf("systemd fails the start: %s", failure)
			}
			environ := map[string]string{"CLOUD_BASE_URL": "https://cloud.example", "CREDENTIALS_DIRECTORY": creds}
			for k, v := range tc.envFile {
				if v == "KEYFILE" {
					v = writeTemp(t, t.TempDir(), "key", "key-of-key-file\n")
				}
				environ[k] = v
			}
			cfg, err := Load(environ)
			err = cfg.Validate(err)
			if tc.wantKey == "" {
				if err == nil || !strings.Contains(err.Error(), "CLOUD_API_KEY") {
					t.Fatalf("no key anywhere: %v, want an error naming CLOUD_API_KEY", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("the bridge refuses to start: %v", err)
			}
			if got := cfg.Cloud.APIKey.Reveal(); got != tc.wantKey || cfg.APIKeySource() != tc.wantSrc {
				t.Errorf("key %q from %q, want %q from %q", got, cfg.APIKeySource(), tc.wantKey, tc.wantSrc)
			}
		})
	}
}

// Every credential the unit loads has a stand-in, so no missing file fails
// the start; the -check commands of README.Debian and deploy/systemd's
// README give the transient unit the same credential lines as the unit.
func TestUnitCredentialsAndTheCheckCommands(t *testing.T) {
	load, set := unitCredentials(t)
	if load[CredentialAPIKey] != "/etc/cloud2mqtt/api_key" {
		t.Errorf("LoadCredential=%s:%s, want /etc/cloud2mqtt/api_key (README.Debian, README)", CredentialAPIKey, load[CredentialAPIKey])
	}
	var want []string
	for id, path := range load {
		if !hasKey(set, id) {
			t.Errorf("LoadCredential=%s:%s has no SetCredential=%s: stand-in: the start fails without the file", id, path, id)
		}
		want = append(want, "LoadCredential="+id+":"+path)
	}
	for id, v := range set {
		if strings.TrimRight(v, "\r\n") != "" {
			t.Errorf("SetCredential=%s holds %q: the bridge would take it as the secret", id, v)
		}
		want = append(want, "SetCredential="+id+":"+strconv.Quote(v)[1:len(strconv.Quote(v))-1])
	}
	slices.Sort(want)
	prop := regexp.MustCompile(`-p '?((?:Load|Set)Credential=[^' ]*)'?`)
	for _, doc := range []string{filepath.Join(deployDir, "debian", "README.Debian"), filepath.Join(deployDir, "systemd", "README.md")} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range prop.FindAllSubmatch(b, -1) {
			got = append(got, string(m[1]))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the -check command passes %q, the unit %q", doc, got, want)
		}
	}
}

// The restart window the deploy documents state is the unit's WatchdogSec
// applied to the bridge's staleness rule: the bridge pings every
// WatchdogSec/2 while a read was answered within three poll intervals (at
// least a minute each) and 30 s (internal/app's staleAfter), so systemd
// restarts it between stale+WatchdogSec/2 and stale+WatchdogSec after the
// last answered read.
func TestUnitWatchdogWindowIsDocumented(t *testing.T) {
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^WatchdogSec=(\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the unit has no WatchdogSec=<seconds>")
	}
	sec, _ := strconv.Atoi(string(m[1]))
	watchdog := time.Duration(sec) * time.Second
	const poll = time.Minute                           // POLL_INTERVAL's default, as the documents say
	stale := 3*max(poll, time.Minute) + 30*time.Second // internal/app staleAfter
	from, to := stale+watchdog/2, stale+watchdog
	for doc, want := range map[string][]string{
		filepath.Join(deployDir, "systemd", "README.md"): {
			"`WatchdogSec=" + string(m[1]) + "`", "every " + words(watchdog/2), words(stale) + " with `POLL_INTERVAL=60s`",
			words(from) + " to " + words(to) + " after the last answered read"},
		filepath.Join(deployDir, "debian", "README.Debian"): {"WatchdogSec=" + string(m[1]) + ":", "about 4 to 4.5 minutes after the last answered read with POLL_INTERVAL=60s"},
	} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(string(text)), " ") // line breaks as spaces
		for _, w := range want {
			if !strings.Contains(flat, w) {
				t.Errorf("%s does not say %q (WatchdogSec=%d, staleness %s: restart %s to %s after the last answered read)", doc, w, sec, stale, from, to)
			}
		}
	}
	if from != 4*time.Minute || to != 4*time.Minute+30*time.Second {
		t.Errorf("README.Debian's \"about 4 to 4.5 minutes\" is now %s to %s", from, to)
	}
}

// words writes a duration as the documents do: "30 s", "3 min 30 s", "4 min".
func words(d time.Duration) string {
	m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case m == 0:
		return strconv.Itoa(s) + " s"
	case s == 0:
		return strconv.Itoa(m) + " min"
	}
	return strconv.Itoa(m) + " min " + strconv.Itoa(s) + " s"
}
