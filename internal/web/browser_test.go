//go:build browser

package web

// A real headless Chromium loads the page from a test server over the fake
// source: every device shown, the budget's figures as the source gave
// them, a change appearing without a reload, the actions working through
// the page (CSRF token, login), and not one console error (which includes
// every Content-Security-Policy violation). Run with
//
//	go test -tags browser ./internal/web/...
//
// and -args -screenshots ../../docs/screenshots to update the screenshots.
// Chromium: Debian's chromium package, or $CHROMIUM.

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"cloud2mqtt/internal/capability"
)

var screenshotDir = flag.String("screenshots", "", "write the page's screenshots to this directory (../../docs/screenshots to update them)")

// browser is one headless Chromium and the console errors of its page.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	errs    []string
	allowed []string // console lines expected by the test
}

func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: install Debian's package (apt-get install -y chromium) or set CHROMIUM to the browser's path")
	return ""
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				msg = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error()
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				msg = "log " + string(ev.Entry.Level) + ": " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errs = append(b.errs, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	}))
	return b
}

// do runs steps with a deadline (the browser itself lives as long as the
// test).
func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitFor waits until the page's expression is true: the page's own
// events (a server-sent event, a fetch) make it so; 5 s is the limit the
// issue sets for a change to show.
func (b *browser) waitFor(t *testing.T, what, js string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatalf("%s: not seen within 5 s: %v", what, err)
	}
}

// darkMode emulates the system's dark colour scheme.
func (b *browser) darkMode(t *testing.T, on bool) {
	t.Helper()
	v := "light"
	if on {
		v = "dark"
	}
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	}))
}

// setValue sets an input's value as typing would (an input event).
func (b *browser) setValue(t *testing.T, id, v string) {
	t.Helper()
	eval[bool](t, b, fmt.Sprintf(`(e => { e.value = %q; return e.dispatchEvent(new Event("input")) })(document.getElementById(%q))`, v, id))
}

// allow expects a console line (a refusal the test provokes).
func (b *browser) allow(substr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, substr)
}

func (b *browser) noErrors(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
next:
	for _, e := range b.errs {
		for _, a := range b.allowed {
			if strings.Contains(e, a) {
				continue next
			}
		}
		t.Errorf("browser console: %s", e)
	}
}

func (b *browser) screenshot(t *testing.T, name string, width, height int64, mobile bool) {
	t.Helper()
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	}
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait}
	}
	b.do(t, chromedp.EmulateViewport(width, height, opts...))
	// Let the layout settle on the new width: the next animation frame.
	eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// A phone shows its screen (the page is long); a desktop the page.
	eval[bool](t, b, `(document.getElementById("toast").hidden = true)`)
	shot := chromedp.FullScreenshot(100)
	if mobile {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot %s: %d bytes", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoSource is the fake account with more devices and a day of requests.
func demoSource(now time.Time) (*fakeSource, *History) {
	src := newFakeSourceAt(now)
	onOff := src.devices[0].Capabilities[0]
	for i, n := range []struct{ name, model, typ, status string }{
		{"Living room lamp", "H6008", "light", StatusOnline}, {"Desk light bar", "H6047", "light", StatusOnline},
		{"Porch light", "H6008", "light", StatusUnreachable}, {"Bathroom fan plug", "H5080", "socket", StatusOnline},
		{"Nursery humidifier", "H7141", "humidifier", StatusOnline}, {"TV backlight", "H6199", "light", StatusOnline},
	} {
		d := DeviceDetail{Device: Device{ID: fmt.Sprintf("dev_%d", i), Name: n.name, Model: n.model, Type: "devices.types." + n.typ,
			Status: n.status, Path: "cloud", LastRead: ptr(now.Add(-time.Duration(7+i*13) * time.Second)), PollInterval: Duration(time.Minute)},
			Values: map[string]any{"powerSwitch": int64(i % 2), "online": true}, Capabilities: []capability.Capability{onOff}}
		if n.status == StatusUnreachable {
			d.LastError = "cloud: state of H6008/AB:CD: 500 Internal Server Error"
			d.PollInterval = Duration(8 * time.Minute)
		}
		src.devices = append(src.devices, d)
	}
	hist := NewHistory(now.Add(-25 * time.Hour))
	for m := range 24 * 60 {
		at := now.Add(-time.Duration(m) * time.Minute)
		for range 4 + (m/60)%3 {
			hist.Observe("state", at)
		}
		if m%7 == 0 {
			hist.Observe("control", at)
		}
		if m%30 == 0 {
			hist.Observe("scenes", at)
			hist.Observe("diy-scenes", at)
		}
		if m%120 == 0 {
			hist.Observe("devices", at)
		}
	}
	return src, hist
}

// serve starts the handler on a loopback port; addr is what HTTP_ADDR
// says ("" for the server's own address).
func serve(t *testing.T, src *fakeSource, act *fakeActions, hist *History, addr, token string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	if addr == "" {
		addr = srv.Listener.Addr().String()
	}
	h, err := New(Options{Source: src, Actions: act, History: hist, Addr: addr, Token: token, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Config.RegisterOnShutdown(h.Close)
	srv.Start()
	t.Cleanup(func() { h.Close(); srv.Close() })
	return srv.URL
}

func TestBrowserPage(t *testing.T) {
	src, hist := demoSource(time.Now())
	act := &fakeActions{src: src}
	url := serve(t, src, act, hist, "", "")
	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))

	// Every device, by name.
	var want []string
	for _, d := range src.Devices() {
		want = append(want, d.Name)
	}
	got := eval[[]string](t, b, `[...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)`)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("device names on the page (sorted by name):\n%q\nwant\n%q", got, want)
	}

	// The budget's figures as the source gave them, and the projection
	// as the handler computed it.
	bud := src.Budget()
	figures := eval[map[string]string](t, b, `Object.fromEntries(["b-today","b-limit","b-proj","b-429","b-queue","b-inflight"].map(id => [id, document.getElementById(id).textContent]))`)
	projected := eval[int](t, b, `state.budget.projected_today`)
	for id, want := range map[string]string{"b-today": "6234", "b-proj": fmt.Sprint(projected), "b-429": "2", "b-queue": "3"} {
		if figures[id] != want {
			t.Errorf("%s shows %q, want %s", id, figures[id], want)
		}
	}
	if bud.RequestsToday != 6234 || !strings.Contains(figures["b-limit"], "10000") || !strings.Contains(figures["b-limit"], "3766 left") {
		t.Errorf("limit: %q", figures["b-limit"])
	}
	if n := eval[int](t, b, `document.querySelectorAll("#chart svg g").length`); n != 24 {
		t.Errorf("chart: %d hours drawn, want 24", n)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#chart rect.s-state").length`); n < 20 {
		t.Errorf("chart: %d state bars", n)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#buckets meter").length`); n != len(bud.Buckets) {
		t.Errorf("buckets: %d meters, want %d", n, len(bud.Buckets))
	}
	if n := eval[int](t, b, `document.querySelectorAll("#problem-list li").length`); n != 2 {
		t.Errorf("problems: %d shown, want 2", n)
	}
	b.screenshot(t, "desktop.png", 1280, 900, false)
	b.darkMode(t, true)
	b.screenshot(t, "desktop-dark.png", 1280, 900, false)
	b.darkMode(t, false)

	// A change at the source shows without a reload.
	src.update("hall_light", func(d *DeviceDetail) { d.Name = "Hall light (moved)"; d.Status = StatusOffline })
	src.setBudget(func(b *Budget) { b.RequestsToday = 7001 })
	src.problems.Add(Problem{Time: time.Now(), Level: "error", Message: "the cloud refused the API key"})
	b.waitFor(t, "the renamed device", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Hall light (moved)")`)
	b.waitFor(t, "the new request count", `document.getElementById("b-today").textContent === "7001"`)
	b.waitFor(t, "the new problem", `document.querySelector("#problem-list li .msg").textContent === "the cloud refused the API key"`)
	if eval[bool](t, b, `performance.getEntriesByType("navigation").length !== 1`) {
		t.Error("the page was reloaded")
	}

	// Sorting and filtering.
	b.do(t, chromedp.Click(`th[data-key="name"] button`))
	if first := eval[string](t, b, `document.querySelector("#device-rows td.name").textContent`); first != want[len(want)-1] {
		t.Errorf("sorted by name descending, first %q", first)
	}
	b.do(t, chromedp.SendKeys(`#filter`, "kitchen"))
	if got := eval[[]string](t, b, `[...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)`); !slices.Equal(got, []string{"Kitchen strip"}) {
		t.Errorf("filtered by kitchen: %q", got)
	}
	b.setValue(t, "filter", "")
	b.do(t, chromedp.Click(`th[data-key="name"] button`))

	// A row opens the device's values and capabilities; its actions work.
	b.do(t, chromedp.Click(`#device-rows tr[data-id="hall_light"] td.name`))
	b.waitFor(t, "the device's values", `document.getElementById("detail").open && document.getElementById("detail-values").textContent.includes("brightness")`)
	if caps := eval[string](t, b, `document.getElementById("detail-caps").textContent`); !strings.Contains(caps, "range") || !strings.Contains(caps, "1–100") {
		t.Errorf("capabilities: %q", caps)
	}
	b.screenshot(t, "phone-device.png", 390, 844, true)
	b.do(t, chromedp.Click(`#a-read`))
	b.waitFor(t, "the read's answer", `document.getElementById("toast").textContent === "Read queued."`)
	b.allow("status of 400 (Bad Request) " + url + "/api/actions/poll-interval")
	b.setValue(t, "a-interval-value", "1s")
	b.do(t, chromedp.Click(`#a-interval button[type="submit"]`))
	b.waitFor(t, "the bridge's refusal", `document.getElementById("toast").textContent.includes("2s or more")`)
	b.setValue(t, "a-interval-value", "5m")
	b.do(t, chromedp.Click(`#a-interval button[type="submit"]`))
	b.waitFor(t, "the interval's answer", `document.getElementById("toast").textContent === "Poll interval set to 5m."`)
	if log := act.log(); !slices.Equal(log, []string{"read hall_light", `interval hall_light "5m"`}) {
		t.Errorf("actions: %q", log)
	}
	b.do(t, chromedp.Click(`#detail-close`))
	b.screenshot(t, "phone.png", 390, 844, true)
	eval[bool](t, b, `(document.getElementById("devices").scrollIntoView(), true)`)
	b.screenshot(t, "phone-devices.png", 390, 844, true)
	b.noErrors(t)
}

func TestBrowserTokenNeededOffLoopback(t *testing.T) {
	const token = "correct-horse-battery"
	src, hist := demoSource(time.Now())
	act := &fakeActions{src: src}
	url := serve(t, src, act, hist, "0.0.0.0:8080", token)
	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	b.waitFor(t, "the login notice", `!document.getElementById("access").hidden && !document.getElementById("login").hidden`)
	if txt := eval[string](t, b, `document.getElementById("access-text").textContent`); !strings.Contains(txt, "HTTP_TOKEN") {
		t.Errorf("the page does not say actions need the token: %q", txt)
	}
	if !eval[bool](t, b, `document.getElementById("refresh").disabled`) {
		t.Error("the refresh button is enabled before login")
	}
	// A request made anyway is refused (Chromium logs the refusal).
	b.allow("status of 401 (Unauthorized) " + url + "/api/actions/refresh-devices")
	status := eval[int](t, b, `fetch("api/actions/refresh-devices", {method: "POST", headers: {"Content-Type": "application/json",
		"X-CSRF-Token": state.session.csrf_token}, body: "{}"}).then(r => r.status)`)
	if status != 401 || len(act.log()) != 0 {
		t.Errorf("an action without the token: %d, calls %q", status, act.log())
	}
	b.do(t, chromedp.SendKeys(`#login-token`, token), chromedp.Click(`#login button[type="submit"]`))
	b.waitFor(t, "the login", `!document.getElementById("refresh").disabled`)
	if eval[bool](t, b, `document.cookie.includes("cloud2mqtt_session")`) {
		t.Error("the session cookie is readable by scripts")
	}
	b.do(t, chromedp.Click(`#refresh`))
	b.waitFor(t, "the refresh's answer", `document.getElementById("toast").textContent === "Reading the device list again."`)
	if log := act.log(); !slices.Equal(log, []string{"refresh"}) {
		t.Errorf("actions: %q", log)
	}
	if eval[bool](t, b, `document.documentElement.outerHTML.includes(`+fmt.Sprintf("%q", token)+`)`) {
		t.Error("the page shows the token")
	}
	b.noErrors(t)
}

func TestBrowserActionsOff(t *testing.T) {
	src, hist := demoSource(time.Now())
	url := serve(t, src, &fakeActions{src: src}, hist, ":8080", "")
	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	b.waitFor(t, "the notice", `!document.getElementById("access").hidden`)
	txt := eval[string](t, b, `document.getElementById("access-text").textContent`)
	if !strings.Contains(txt, "Actions are off") || !strings.Contains(txt, "HTTP_ADDR=:8080") || !strings.Contains(txt, "set HTTP_TOKEN") {
		t.Errorf("notice: %q", txt)
	}
	if !eval[bool](t, b, `[...document.querySelectorAll("button.action")].every(b => b.disabled)`) {
		t.Error("action buttons enabled while actions are off")
	}
	b.noErrors(t)
}

// TestBrowserManyDevices: a large account (1000 devices, a tenth of them
// changing every second) is shown whole and kept live.
func TestBrowserManyDevices(t *testing.T) {
	now := time.Now()
	src, hist := demoSource(now)
	proto := src.devices[0]
	src.devices = nil
	for i := range 1000 {
		d := proto
		d.ID, d.Name = fmt.Sprintf("light_%04d", i), fmt.Sprintf("Light %04d", i)
		src.devices = append(src.devices, d)
	}
	url := serve(t, src, &fakeActions{src: src}, hist, "", "")
	b := newBrowser(t)
	start := time.Now()
	b.do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	t.Logf("loaded in %v", time.Since(start))
	if n := eval[int](t, b, `new Set([...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)).size`); n != 1000 {
		t.Fatalf("%d device names on the page, want 1000", n)
	}
	for i := range 100 {
		src.update(fmt.Sprintf("light_%04d", i*10), func(d *DeviceDetail) { d.LastRead = ptr(time.Now()) })
	}
	src.update("light_0999", func(d *DeviceDetail) { d.Name = "Light 0999 (renamed)" })
	start = time.Now()
	b.waitFor(t, "the renamed device", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Light 0999 (renamed)")`)
	t.Logf("change seen in %v", time.Since(start))
	b.noErrors(t)
}
