package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"cloud2mqtt/internal/config"
)

// The commands, after the flags: cloud2mqtt [flags] [command].
const (
	cmdRun     = ""
	cmdDevices = "devices"
	cmdHelp    = "help"
	cmdVersion = "version"
)

// commands are the commands with their one line of meaning, in the order
// help lists them.
var commands = [][2]string{
	{"(none)", "run the bridge"},
	{cmdDevices, "print the account's devices, their topic ids and capabilities, and exit"},
	{cmdHelp, "print this help (as -h)"},
	{cmdVersion, "print the version (as -version)"},
}

// shortUsage is what a mistake on the command line gets, on stderr.
const shortUsage = `usage: cloud2mqtt [flags] [devices | help | version]
Run "cloud2mqtt help" for the flags, the required settings and where they are kept.
`

// installs says where the configuration lives for each way of installing.
var installs = [][2]string{
	{"Debian package", "/etc/cloud2mqtt/cloud2mqtt.env (the unit's EnvironmentFile=); the API key in /etc/cloud2mqtt/api_key (a systemd credential); set-up: /usr/share/doc/cloud2mqtt/README.Debian"},
	{"Archive", "the same two files once installed as docs/install.md's \"Archive\" section says (its cloud2mqtt.service reads them); config.example.env beside the binary lists every setting"},
	{"Container", "cloud2mqtt.env beside docker-compose.yml (its env_file); the API key in the file api_key (the secret cloud_api_key)"},
	{"Home Assistant app", "the app's Configuration tab: options named like the settings in lower case (cloud_api_key is CLOUD_API_KEY)"},
	{"By hand", "variables exported in the shell: read -rsp 'API key: ' CLOUD_API_KEY && export CLOUD_API_KEY"},
}

// printHelp writes the whole help: what the program is, its commands and
// flags, the settings it cannot run without, and where the configuration
// lives for each install. The flags come from fs's own definitions and the
// settings from the config package's tags, so help cannot drift from them.
func printHelp(w io.Writer, flags func(io.Writer)) {
	fmt.Fprint(w, `cloud2mqtt bridges a smart-home vendor's cloud API to MQTT and Home Assistant.

usage: cloud2mqtt [flags] [command]

commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c[0], c[1])
	}
	_ = tw.Flush()
	fmt.Fprint(w, "\nflags (before or after the command):\n")
	flags(w)
	fmt.Fprint(w, "\nrequired settings (environment variables; -demo needs none):\n")
	docs := map[string]string{}
	for _, v := range config.Vars() {
		docs[v.Name] = v.Doc
	}
	for _, name := range config.Required {
		fmt.Fprintf(w, "  %s\n      %s\n", name, docs[name])
	}
	fmt.Fprintf(w, "  and a broker: MQTT_URL (default %s), or MQTT_URL=embedded for the built-in one\n", defaultOf("MQTT_URL"))
	fmt.Fprint(w, "\nwhere the configuration lives:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, i := range installs {
		fmt.Fprintf(tw, "  %s\t%s\n", i[0], i[1])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, `
Every setting, with its default and meaning, is in config.example.env (the .deb installs it as
/etc/cloud2mqtt/cloud2mqtt.env) and docs/configuration.md. Secrets may also come from a file
(%s) or a systemd credential; they are never printed.
Start with: cloud2mqtt -check   (every setting, then the broker, the ports and the cloud: ok, warn or FAIL)
`, strings.Join(secretFiles(), ", "))
}

// defaultOf is a setting's default.
func defaultOf(name string) string {
	for _, v := range config.Vars() {
		if v.Name == name {
			return v.Default
		}
	}
	return ""
}

// secretFiles are the *_FILE variables of the secrets.
func secretFiles() []string {
	var out []string
	for _, v := range config.Vars() {
		if v.Secret {
			out = append(out, v.Name+"_FILE")
		}
	}
	return out
}
