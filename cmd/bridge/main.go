// Command bridge is the cloud2mqtt daemon, which bridges the smart-device cloud
// API to MQTT and Home Assistant; the work is done in internal/app.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/caarlos0/env/v11"
	"github.com/rs/zerolog"

	"cloud2mqtt/internal/addon"
	"cloud2mqtt/internal/app"
	"cloud2mqtt/internal/config"
	"cloud2mqtt/internal/demo"
	"cloud2mqtt/internal/logging"
)

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, buildVersion reads what the Go toolchain recorded.
var version = ""

// buildVersion is the version a user can report: the -ldflags version, else the
// module version, else the VCS revision (+dirty), else "dev".
func buildVersion(ldflags string, info *debug.BuildInfo, ok bool) string {
	if ldflags != "" {
		return ldflags
	}
	if !ok || info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return rev
}

// gcPercent is the collector's target unless GOGC is set: the small, slowly
// allocating heap keeps resident memory low at little CPU cost.
const gcPercent = 25

// maxProcs is GOMAXPROCS unless set: one P does the daemon's work, and extra
// ones cost idle CPU without making a command faster.
const maxProcs = 1

// tuneRuntime applies gcPercent and maxProcs unless the environment sets
// GOGC or GOMAXPROCS.
func tuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(maxProcs)
	}
}

func main() {
	info, ok := debug.ReadBuildInfo()
	version = buildVersion(version, info, ok)
	tuneRuntime(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitConfig is EX_CONFIG (sysexits.h): retrying will not fix the
// configuration, so the systemd unit does not restart on it.
const exitConfig = 78

// run is the whole program, testable: it returns the exit code.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cloud2mqtt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// -h prints the help on stdout (asked for); a mistake gets the short
	// usage on stderr, after the flag package's own line.
	fs.Usage = func() {}
	showVersion := fs.Bool("version", false, "print the version and exit")
	check := fs.Bool("check", false, "check every setting, bind the ports the bridge will listen on, reach the broker, the cloud and its events; print a report and exit 1 on a problem")
	demoMode := fs.Bool("demo", false, "run against a simulated cloud and an embedded MQTT broker (no account needed)")
	sub, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, printFlags(fs))
		return 0
	case err != nil:
		// The flag package has printed its own errors.
		var cmdErr commandError
		if errors.As(err, &cmdErr) {
			fmt.Fprintf(stderr, "cloud2mqtt: %v\n", err)
		}
		fmt.Fprint(stderr, shortUsage)
		return 2
	}
	switch {
	case sub == cmdHelp:
		printHelp(stdout, printFlags(fs))
		return 0
	case *showVersion || sub == cmdVersion:
		fmt.Fprintln(stdout, "cloud2mqtt", version)
		return 0
	}

	environment := env.ToMap(environ)
	// Home Assistant app mode: the app's options and the Supervisor's broker.
	environment, appErr := addon.Environment(ctx, environment, nil)
	if appErr != nil {
		fmt.Fprintf(stderr, "bridge: %v\n", appErr)
		return appExitCode(appErr)
	}
	cfg, loadErr := config.Load(environment)
	cfg.Demo = *demoMode
	// The one verdict on the settings: -check prints it, the daemon refuses
	// its errors and logs its warnings.
	problems := scrubProblems(app.Problems(cfg, loadErr), environment)
	isTerm := false
	if f, ok := stderr.(*os.File); ok {
		isTerm = logging.IsTerminal(f)
	}
	// Every log line passes through a writer that hides the secrets, as a
	// last line of defence behind code that does not log them.
	secrets := []string{cfg.Cloud.APIKey.Reveal(), cfg.MQTT.Password.Reveal(), cfg.HTTP.Token.Reveal()}
	logOut := logging.Redact(stderr, secrets...)
	// Warnings and errors also go to <base>/bridge/logging once the broker
	// is connected, redacted the same way.
	forward := logging.NewForwarder()
	where := logging.Where{Terminal: isTerm, Journal: environment["JOURNAL_STREAM"] != ""}
	var held heldLines // -check's logs, written after its report
	if *check {
		// The report alone on stdout: what the checks log waits, in
		// case stdout and stderr are one pipe (systemd-run --pipe).
		logOut, forward = logging.Redact(&held, secrets...), nil
	}
	log, logErr := logging.NewFor(logOut, cfg.Log.Level, cfg.Log.Format, where, forwardTo(forward, secrets)...)
	if logErr != nil {
		log, _ = logging.NewFor(logOut, "info", "auto", where)
	}
	// The level may change at run time, so the logger passes everything and
	// zerolog's process-wide level, which the daemon owns, filters.
	zerolog.SetGlobalLevel(log.GetLevel())
	log = log.Level(zerolog.TraceLevel)

	if *check {
		check := app.Check
		if cfg.Demo {
			check = demo.Check // the simulated account
		}
		good := check(ctx, cfg, problems.Err(), stdout, log)
		held.writeTo(stderr)
		if good {
			return 0
		}
		return 1
	}
	if len(problems.Errors()) > 0 {
		// The warnings too: CLOUD_APIKEY explains an empty CLOUD_API_KEY.
		fmt.Fprintf(stderr, "cloud2mqtt: the configuration has problems:\n%s(run with -check for a full report)\n", problemLines(problems))
		return exitConfig
	}
	if sub == cmdDevices {
		devices := app.Devices
		if cfg.Demo {
			devices = demo.Devices
		}
		if err := devices(ctx, cfg, stdout, log); err != nil {
			fmt.Fprintf(stderr, "cloud2mqtt: %v\n", err)
			return 1
		}
		return 0
	}

	ingress, err := appIngress(environment)
	if err != nil {
		fmt.Fprintf(stderr, "cloud2mqtt: %v\n", err)
		return exitConfig
	}
	m := &app.Main{Config: cfg, Version: version, Log: log, LogForward: forward, Ingress: ingress}
	runIt := m.Run
	if cfg.Demo {
		// The simulated cloud and lights, the embedded broker, and the
		// instructions on stdout.
		runIt = func(ctx context.Context) error { return demo.Run(ctx, m, stdout) }
	}
	if err := runIt(ctx); err != nil {
		log.Error().Err(err).Msg("stopped with an error")
		return 1
	}
	return 0
}

// parseArgs parses the flags and the command. Flags may also follow the
// command (cloud2mqtt devices -demo), which the flag package alone would ignore.
func parseArgs(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	sub := fs.Arg(0)
	if fs.NArg() > 1 {
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", err
		}
		if fs.NArg() > 0 {
			return "", commandError(fmt.Sprintf("unexpected argument %s after the command %s", config.Quote(fs.Arg(0)), sub))
		}
	}
	switch sub {
	case cmdRun, cmdDevices, cmdHelp, cmdVersion:
		return sub, nil
	}
	if hint, ok := config.Closest(sub, []string{cmdDevices, cmdHelp, cmdVersion}); ok {
		return "", commandError(fmt.Sprintf("unknown command %s: did you mean %s?", config.Quote(sub), hint))
	}
	if strings.Contains(sub, "=") {
		return "", commandError(fmt.Sprintf("unknown command %s: settings are environment variables, set before the program: %s cloud2mqtt", config.Quote(sub), config.Clip(sub)))
	}
	return "", commandError("unknown command " + config.Quote(sub))
}

// commandError is a mistake in the command line that the flag package did
// not already print.
type commandError string

func (e commandError) Error() string { return string(e) }

// printFlags writes fs's flags as the help shows them.
func printFlags(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fs.SetOutput(w)
		fs.PrintDefaults()
		fmt.Fprint(w, "  -h, -help\n    \tprint this help\n")
	}
}

// problemLines is the verdict as indented lines, one a problem, the errors
// first.
func problemLines(problems config.Problems) string {
	var b strings.Builder
	for _, p := range problems {
		for _, line := range strings.Split(p.Text, "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String()
}

// scrubProblems is problems with, in Home Assistant app mode, the values
// the app's options must not show taken out of their words (addon.Scrub).
func scrubProblems(problems config.Problems, environment map[string]string) config.Problems {
	out := make(config.Problems, len(problems))
	for i, p := range problems {
		p.Text = appScrub(errors.New(p.Text), environment).Error()
		out[i] = p
	}
	return out
}

// forwardTo is the forwarder as NewFor's extra output, redacted; none
// when f is nil.
func forwardTo(f *logging.Forwarder, secrets []string) []io.Writer {
	if f == nil {
		return nil
	}
	return []io.Writer{logging.Redact(f, secrets...)}
}

// heldLines keeps log lines until the report is written; safe for the
// checks' goroutines.
type heldLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (h *heldLines) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.Write(p)
}

// writeTo writes the lines held to w.
func (h *heldLines) writeTo(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.b.WriteTo(w)
}
