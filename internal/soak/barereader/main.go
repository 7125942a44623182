// Command barereader is the yardstick of the bridge's idle cost:
// the least a Go program does to read the state of every device of an
// account once per interval, written as a first program would be. The
// bridge does more with each read (compare, publish, discovery, status),
// so "the bridge costs half the bare reader" means its pacing and wake-ups
// are better than a naive reader's, not that it skips work.
//
// It is a measuring instrument, not part of the daemon: internal/soak's
// TestIdleRatio builds it and runs it alternately with the bridge against
// the same simulator (cmd/cloudsim) and compares their CPU time and
// context switches.
//
//	barereader -url http://127.0.0.1:8081 -key KEY [-interval 60s] [-mode timers|ticker|grid]
//
// What it does, as a naive peer would:
//   - net/http's default client (its transport keeps 2 idle connections
//     per host), one goroutine per request, the answer read whole and
//     decoded into map[string]any;
//   - the device list read once at start; then each device read once per
//     interval, the N reads spread evenly over it (-mode timers: every
//     device on its own timer, time.AfterFunc, started at i·interval/N;
//     -mode ticker: one ticker every interval/N, each tick the next device;
//     -mode grid: one ticker every second, each tick the devices due in that
//     second together, as the bridge batches its reads).
//
// It prints "ready <n>" once every device is scheduled, "reads=<r> errors=<e>"
// on SIGUSR1, and exits on SIGINT or SIGTERM. Nothing else wakes it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	pathDevices = "/router/api/v1/user/devices"
	pathState   = "/router/api/v1/device/state"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

type device struct{ SKU, Device string }

type reader struct {
	base, key, header string
	reads, errs       atomic.Int64
	seq               atomic.Int64
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("barereader", flag.ContinueOnError)
	fs.SetOutput(stdout)
	base := fs.String("url", "", "the cloud's base URL, e.g. http://127.0.0.1:8081 (cmd/cloudsim's)")
	key := fs.String("key", "", "the API key")
	header := fs.String("key-header", "Service-API-Key", "the header that carries the API key")
	interval := fs.Duration("interval", 60*time.Second, "how often each device is read")
	mode := fs.String("mode", "timers", "how the reads are spread: timers (one per device), ticker (one, every interval/N) or grid (one a second, the due devices together)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *base == "" || *key == "":
		return errors.New("barereader: -url and -key are required")
	case *interval <= 0:
		return fmt.Errorf("barereader: -interval %s: give a positive duration", *interval)
	case *mode != "timers" && *mode != "ticker" && *mode != "grid":
		return fmt.Errorf("barereader: -mode %q: use timers, ticker or grid", *mode)
	}
	r := &reader{base: *base, key: *key, header: *header}
	devices, err := r.devices(ctx)
	if err != nil {
		return err
	}
	if len(devices) == 0 {
		return errors.New("barereader: the account has no devices")
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)

	stopReads := r.schedule(ctx, *mode, devices, *interval)
	defer stopReads()
	fmt.Fprintf(stdout, "ready %d\n", len(devices))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-usr1:
			fmt.Fprintf(stdout, "reads=%d errors=%d\n", r.reads.Load(), r.errs.Load())
		}
	}
}

// schedule starts the reads in the given mode and returns what stops them.
func (r *reader) schedule(ctx context.Context, mode string, devices []device, interval time.Duration) (stop func()) {
	n := len(devices)
	switch mode {
	case "timers":
		timers := make([]*time.Timer, n)
		for i, d := range devices {
			// Armed far away first, so that t is set before f can run.
			var t *time.Timer
			t = time.AfterFunc(time.Hour, func() {
				t.Reset(interval)
				r.read(ctx, d)
			})
			t.Reset(interval * time.Duration(i) / time.Duration(n))
			timers[i] = t
		}
		return func() {
			for _, t := range timers {
				t.Stop()
			}
		}
	case "ticker":
		return r.tick(ctx, interval/time.Duration(n), func(k int) {
			go r.read(ctx, devices[k%n])
		})
	default: // grid
		secs := max(int(interval/time.Second), 1)
		return r.tick(ctx, interval/time.Duration(secs), func(k int) {
			s := k % secs
			for i := s * n / secs; i < (s+1)*n/secs; i++ {
				go r.read(ctx, devices[i])
			}
		})
	}
}

// tick calls f(0), f(1), ... every period until stopped.
func (r *reader) tick(ctx context.Context, period time.Duration, f func(k int)) (stop func()) {
	t := time.NewTicker(period)
	done := make(chan struct{})
	go func() {
		for k := 0; ; k++ {
			select {
			case <-t.C:
				f(k)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { t.Stop(); close(done) }
}

func (r *reader) devices(ctx context.Context) ([]device, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+pathDevices, nil)
	if err != nil {
		return nil, fmt.Errorf("barereader: -url %q: %w", r.base, err)
	}
	req.Header.Set(r.header, r.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("barereader: device list: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Code int `json:"code"`
		Data []struct {
			SKU    string `json:"sku"`
			Device string `json:"device"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("barereader: device list (%s): %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || list.Code != http.StatusOK {
		return nil, fmt.Errorf("barereader: device list answered %s, code %d", resp.Status, list.Code)
	}
	out := make([]device, 0, len(list.Data))
	for _, d := range list.Data {
		out = append(out, device{SKU: d.SKU, Device: d.Device})
	}
	return out, nil
}

// read is one state read: request, the whole answer, decoded.
func (r *reader) read(ctx context.Context, d device) {
	body, _ := json.Marshal(map[string]any{
		"requestId": strconv.FormatInt(r.seq.Add(1), 10),
		"payload":   map[string]string{"sku": d.SKU, "device": d.Device},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+pathState, bytes.NewReader(body))
	if err != nil {
		r.errs.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(r.header, r.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.errs.Add(1)
		return
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer map[string]any
	if err == nil {
		err = json.Unmarshal(b, &answer)
	}
	if err != nil || resp.StatusCode != http.StatusOK || answer["code"] != float64(http.StatusOK) {
		r.errs.Add(1)
		return
	}
	r.reads.Add(1)
}
