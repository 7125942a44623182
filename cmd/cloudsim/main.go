// Command cloudsim serves the simulated cloud service standalone, for demo
// mode, manual testing and benchmarks against a real HTTP port.
//
//	cloudsim -addr 127.0.0.1:8081 -key mykey [-catalogue devices.json] [-errors-as-200]
//	         [-events-addr 127.0.0.1:8883 -event-every 30s]
//	         [-quota 10000 -quota-window 24h -quota-reset seconds] [-short-quota 100 -short-window 1m]
//	         [-latency 5ms] [-tls-cert cert.pem -tls-key key.pem]
//
// With -latency every answer is delayed by that much, like a distant cloud.
// With -tls-cert and -tls-key it serves HTTPS and HTTP/2, as the live cloud
// does; the bridge trusts the certificate through SSL_CERT_FILE.
//
// With -quota the account has a request quota, told in the API-RateLimit-*
// headers and enforced with 429; -short-quota adds a second window in
// X-RateLimit-*.
//
// With -events-addr it also runs the service's event broker, with the API
// key as user name and password, publishing a random device event on
// GA/<key> every -event-every; point CLOUD_EVENTS_URL at it.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// bridgeEnv is the bridge's environment for this simulator, to copy into a
// shell (the key is the simulator's, not a secret).
func bridgeEnv(url, header, key string) string {
	s := "CLOUD_BASE_URL=" + url + " CLOUD_API_KEY=" + key
	if header != cloudsim.DefaultKeyHeader {
		s += " CLOUD_API_KEY_HEADER=" + header
	}
	return s
}

// run serves the simulator until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cloudsim", flag.ContinueOnError)
	fs.SetOutput(stdout)
	addr := fs.String("addr", "127.0.0.1:8081", "address to listen on (host:port; port 0 picks a free one)")
	key := fs.String("key", cloudsim.DefaultAPIKey, "the API key clients must send")
	header := fs.String("key-header", cloudsim.DefaultKeyHeader, "the header that carries the API key")
	catalogue := fs.String("catalogue", "demo", `device-list JSON file of the account's devices, or "demo" for the built-in catalogue`)
	scenes := fs.String("scenes", "", "optional scenes-endpoint answer (JSON) to serve for every light without scenes of its own")
	errorsAs200 := fs.Bool("errors-as-200", false, "answer 400/404 failures with HTTP 200 and the code in the body, like the live service")
	empty429 := fs.Bool("empty-429-body", false, "answer 429 with an empty body")
	seed := fs.Uint64("seed", 1, "seed of the sensor drift and fractional faults")
	eventsAddr := fs.String("events-addr", "", "also serve device events from an embedded MQTT broker on this address (empty: off)")
	eventEvery := 30 * time.Second
	fs.Func("event-every", "with -events-addr: how often a random device event is raised: seconds (30) or a duration (30s, 1m); default 30s", func(v string) (err error) {
		eventEvery, err = config.ParseDurationFor("-event-every", v)
		return err
	})
	var latency time.Duration
	fs.Func("latency", "delay every answer by this much: a duration (5ms) or seconds; default 0", func(v string) (err error) {
		latency, err = config.ParseDurationFor("-latency", v)
		return err
	})
	var quota, short cloudsim.Quota
	quota.Window, short.Window = 24*time.Hour, time.Minute
	fs.IntVar(&quota.Limit, "quota", 0, "the account's request quota: requests per -quota-window, told in the API-RateLimit-* headers; 0: none")
	fs.Func("quota-window", "with -quota: the quota's window (24h, 180s; windows start at multiples of it since 1970, so a day at midnight UTC); default 24h", func(v string) (err error) {
		quota.Window, err = config.ParseDurationFor("-quota-window", v)
		return err
	})
	resetFormat := fs.String("quota-reset", "seconds", "how the Reset headers say when a window renews: seconds (from now), unix (seconds) or unix-ms")
	fs.IntVar(&short.Limit, "short-quota", 0, "a second, shorter window: requests per -short-window, told in the X-RateLimit-* headers; 0: none")
	fs.Func("short-window", "with -short-quota: its window; default 1m", func(v string) (err error) {
		short.Window, err = config.ParseDurationFor("-short-window", v)
		return err
	})
	certFile := fs.String("tls-cert", "", "serve HTTPS (and HTTP/2, like the live cloud) with this PEM certificate; with -tls-key")
	keyFile := fs.String("tls-key", "", "the PEM private key of -tls-cert")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("cloudsim: -tls-cert and -tls-key go together: give both files for HTTPS, or neither for plain HTTP")
	}
	format, ok := cloudsim.ParseResetFormat(*resetFormat)
	if !ok {
		return fmt.Errorf("cloudsim: -quota-reset %q: use seconds, unix or unix-ms", *resetFormat)
	}
	quota.Reset, short.Reset = format, format
	for _, q := range []struct {
		name string
		q    cloudsim.Quota
	}{{"-quota", quota}, {"-short-quota", short}} {
		if q.q.Limit < 0 || q.q.Window <= 0 {
			return fmt.Errorf("cloudsim: %s %d per %s: give a number of requests of 0 (none) or more and a positive window", q.name, q.q.Limit, q.q.Window)
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("cloudsim: unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	if latency < 0 {
		return fmt.Errorf("cloudsim: -latency %s: give a delay of 0 or more", latency)
	}
	if *key == "" {
		return errors.New("cloudsim: -key is empty: give the key clients must send")
	}

	var cat *cloudsim.Catalogue
	if *catalogue == "demo" {
		cat = cloudsim.DemoCatalogue()
	} else {
		var err error
		if cat, err = cloudsim.LoadCatalogue(*catalogue); err != nil {
			return err
		}
	}
	if *scenes != "" {
		b, err := os.ReadFile(*scenes)
		if err != nil {
			return fmt.Errorf("cloudsim: read -scenes: %w", err)
		}
		if cat.DefaultScenes, err = cloudsim.ParseSceneList(b); err != nil {
			return fmt.Errorf("cloudsim: -scenes %s: %w", *scenes, err)
		}
	}

	sim := cloudsim.New(cloudsim.Options{
		APIKey: *key, KeyHeader: *header, Catalogue: cat,
		ErrorsAs200: *errorsAs200, EmptyRateLimitBody: *empty429, Seed: *seed,
		Quota: quota, ShortQuota: short,
	})
	sim.Faults().SetLatency(cloudsim.AnyEndpoint, latency)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cloudsim: listen on %s: %w; choose another -addr", *addr, err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	serve, url := srv.Serve, "http://"+ln.Addr().String()
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("cloudsim: -tls-cert/-tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
		serve, url = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }, "https://"+ln.Addr().String()
	}
	fmt.Fprintf(stdout, "cloudsim: serving %d devices at %s\n", len(sim.Devices()), url)
	fmt.Fprintf(stdout, "cloudsim: for the bridge: %s\n", bridgeEnv(url, *header, *key))
	if latency > 0 {
		fmt.Fprintf(stdout, "cloudsim: every answer delayed by %s\n", config.FormatDuration(latency))
	}
	if quota.Limit > 0 {
		fmt.Fprintf(stdout, "cloudsim: a quota of %d requests per %s (API-RateLimit-* headers)\n", quota.Limit, config.FormatDuration(quota.Window))
	}
	if short.Limit > 0 {
		fmt.Fprintf(stdout, "cloudsim: a short window of %d requests per %s (X-RateLimit-* headers)\n", short.Limit, config.FormatDuration(short.Window))
	}

	if *eventsAddr != "" {
		stopEvents, err := serveEvents(ctx, sim, *eventsAddr, *key, eventEvery, stdout)
		if err != nil {
			return err
		}
		defer stopEvents()
	}

	served := make(chan error, 1)
	go func() { served <- serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("cloudsim: serve: %w", err)
	case <-ctx.Done():
	}
	sim.Faults().Clear()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cloudsim: serve: %w", err)
	}
	return nil
}
