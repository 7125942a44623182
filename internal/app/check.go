package app

import (
	"context"
	"errors"
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
	"cloud2mqtt/internal/topic"
)

// Check validates the configuration, reaches the broker and the cloud, and
// writes one line per thing tried: "ok", "warn" or "FAIL"; it returns false on
// a FAIL. cfgErr is the settings' verdict or Load's error; errors stop the
// report there. Secrets appear only redacted.
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
		level := config.Level(0)
		if !good {
			level = config.Error
		}
		if !report(out, level, what, detail) {
			ok = false
		}
	}
	problems := verdict(cfg, cfgErr)
	for _, p := range problems {
		report(out, p.Level, "configuration", p.Text)
	}
	if len(problems.Errors()) > 0 {
		return false
	}
	if len(problems) == 0 {
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

	// The verdict has tried the state directory.
	if cfg.State.Dir == "" {
		say(true, "state directory", "off (STATE_DIR is empty): after a restart, devices show only once the cloud answers")
	} else {
		say(true, "state directory", cfg.State.Dir+" is writable")
	}

	var limits cloud.RateLimits // what the list's answer says of the quota
	devs, err := listDevices(ctx, cfg, log, &limits)
	if err != nil {
		say(false, "cloud", err.Error())
	} else {
		say(true, "cloud", fmt.Sprintf("the API key works; %d devices on the account", len(devs)))
		checkQuota(cfg, devs, limits, out, time.Now()) // check_quota.go
	}
	checkEvents(ctx, cfg, say) // check_ports.go
	if cfg.Local.Enabled && !cfg.Demo {
		checkLocal(ctx, cfg, devs, say, out, log) // lan.go
	}
	return ok
}

// verdict is cfgErr as Check is handed it: the Problems cmd/bridge made,
// or Load's error with the rest of the verdict added.
func verdict(cfg config.Config, cfgErr error) config.Problems {
	var ps config.Problems
	if errors.As(cfgErr, &ps) {
		return ps
	}
	return Problems(cfg, cfgErr)
}

// report writes one report line (level 0 is ok) and reports whether it is not
// a FAIL.
func report(out io.Writer, level config.Level, what, detail string) bool {
	mark := "ok  "
	if level != 0 {
		mark = level.String()
	}
	fmt.Fprintf(out, "%s %s", mark, what)
	// "cloud: cloud: devices: ..." says its subject once.
	if detail = strings.TrimPrefix(detail, what+": "); detail != "" {
		fmt.Fprintf(out, ": %s", detail)
	}
	fmt.Fprintln(out)
	return level != config.Error
}

// listDevices reads the account's devices once; limits, when not nil, gets the
// answer's rate-limit headers.
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
// The configuration's warnings (an unknown variable) are logged.
func Devices(ctx context.Context, cfg config.Config, out io.Writer, log zerolog.Logger) error {
	logWarnings(cfg.Problems(nil), log)
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
