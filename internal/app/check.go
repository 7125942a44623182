package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/mqtt"
	"cloud2mqtt/internal/statedir"
	"cloud2mqtt/internal/topic"
)

// Check validates the configuration, reaches the broker and the cloud, and
// writes a report. It returns false when anything is wrong. Secrets appear
// only redacted.
func Check(ctx context.Context, cfg config.Config, cfgErr error, out io.Writer, log zerolog.Logger) bool {
	ok := true
	fmt.Fprintln(out, "cloud2mqtt configuration check")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, row := range cfg.Table() {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	fmt.Fprintln(out)
	say := func(good bool, what, detail string) {
		mark := "ok  "
		if !good {
			mark = "FAIL"
			ok = false
		}
		fmt.Fprintf(out, "%s %s", mark, what)
		// "cloud: cloud: devices: ..." says its subject once.
		if detail = strings.TrimPrefix(detail, what+": "); detail != "" {
			fmt.Fprintf(out, ": %s", detail)
		}
		fmt.Fprintln(out)
	}
	unknown := cfg.UnknownVars()
	if cfgErr != nil {
		for _, line := range strings.Split(cfgErr.Error(), "\n") {
			say(false, "configuration", strings.TrimPrefix(line, "config: "))
		}
		for _, u := range unknown {
			say(false, "configuration", u.String())
		}
		return false
	}
	for _, u := range unknown {
		say(false, "configuration", u.String())
	}
	// What Load took other than as written (a value wrapped in quotes).
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(out, "warn configuration: %s\n", w)
	}
	if len(unknown) == 0 {
		say(true, "configuration", "every variable is valid")
	}

	checkListeners(cfg, say) // check_ports.go
	if !cfg.Demo && !cfg.Embedded() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := mqtt.Connect(cctx, mqtt.Config{
			URL: cfg.MQTT.URL, CAFile: cfg.MQTT.CAFile, CertFile: cfg.MQTT.CertFile, KeyFile: cfg.MQTT.KeyFile,
			Username: cfg.MQTT.Username, Password: cfg.MQTT.Password.Reveal(),
			// A client id of its own: the running daemon's session is left alone.
			ClientID: mqtt.DefaultClientID("check " + cfg.MQTT.BaseTopic), Logger: zerolog.Nop(),
			FailFast: true, // the first attempt's failure is the answer
		}, nil)
		cancel()
		if err != nil {
			say(false, "broker", err.Error())
		} else {
			say(true, "broker", "connected to "+redactURL(cfg.MQTT.URL))
			c.Close(context.Background())
		}
	}

	if cfg.State.Dir == "" {
		say(true, "state directory", "off (STATE_DIR is empty): after a restart, devices show only once the cloud answers")
	} else if err := statedir.Dir(cfg.State.Dir).Check(); err != nil {
		say(false, "state directory", err.Error())
	} else {
		say(true, "state directory", cfg.State.Dir+" is writable")
	}

	var limits cloud.RateLimits // what the list's answer says of the quota
	devs, err := listDevices(ctx, cfg, log, &limits)
	if err != nil {
		say(false, "cloud", err.Error())
	} else {
		say(true, "cloud", fmt.Sprintf("the API key works; %d devices on the account", len(devs)))
		checkQuota(cfg, devs, limits, out) // check_quota.go
	}
	checkEvents(ctx, cfg, say) // check_ports.go
	if cfg.Local.Enabled && !cfg.Demo {
		checkLocal(ctx, cfg, devs, say, out, log) // lan.go
	}
	return ok
}

// listDevices reads the account's devices once (in -demo the simulated
// account's: internal/demo points CLOUD_BASE_URL there); limits, when not
// nil, gets what the answer's rate-limit headers say.
func listDevices(ctx context.Context, cfg config.Config, log zerolog.Logger, limits *cloud.RateLimits) ([]capability.Device, error) {
	base, key := cfg.Cloud.BaseURL, cfg.Cloud.APIKey.Reveal()
	var onLimits func(cloud.RateLimits)
	if limits != nil {
		// Called before ListDevices returns, on this goroutine's request.
		onLimits = func(l cloud.RateLimits) { *limits = l }
	}
	c, err := cloud.New(cloud.Config{BaseURL: base, APIKey: key, KeyHeader: cfg.Cloud.KeyHeader, KeySource: cfg.APIKeySource(),
		HTTPClient: &http.Client{Timeout: cfg.Cloud.Timeout}, Logger: log, OnLimits: onLimits})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.Cloud.Timeout+5*time.Second)
	defer cancel()
	return c.ListDevices(cctx)
}

// Devices prints the account's devices and their capabilities as a table.
// The environment's unknown variables are warnings in log.
func Devices(ctx context.Context, cfg config.Config, out io.Writer, log zerolog.Logger) error {
	warnUnknown(cfg, log)
	devs, err := listDevices(ctx, cfg, log, nil)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSKU\tDEVICE\tNAME\tTYPE\tCAPABILITIES")
	for _, d := range devs {
		var caps []string
		for _, c := range d.Capabilities {
			caps = append(caps, c.Instance)
		}
		sort.Strings(caps)
		typ := strings.TrimPrefix(d.Type, "devices.types.")
		if typ == "" {
			typ = "-"
		}
		name := d.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", topic.DeviceID(d.SKU, d.Device), d.SKU, d.Device, name, typ, strings.Join(caps, ","))
	}
	return tw.Flush()
}

func redactURL(raw string) string {
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "***@" + raw[i+1:]
		}
	}
	return raw
}
