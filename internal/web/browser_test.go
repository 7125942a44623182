//go:build browser

package web

// A real headless Chromium loads the page over the fake source: every device
// shown, the budget as given, a change without a reload, the actions working
// (CSRF token, login), and no console error, CSP violations included. Run with
//
//	go test -tags browser ./internal/web/...
//
// (-args -screenshots DIR keeps screenshots). Chromium: Debian's chromium, or $CHROMIUM.

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/web/webtest"
)

var screenshotDir = flag.String("screenshots", "", "write the page's screenshots over the fake bridge to this directory (docs/screenshots are internal/app's, over the daemon)")

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
	return serveWith(t, Options{Source: src, Actions: act, History: hist, Addr: addr, Token: token})
}

// serveWith starts the handler of o (events every 200 ms) on a loopback
// port; an empty Addr is the server's own address.
func serveWith(t *testing.T, o Options) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	if o.Addr == "" {
		o.Addr = srv.Listener.Addr().String()
	}
	o.Interval = 200 * time.Millisecond
	h, err := New(o)
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
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))

	// Every device, by name.
	var want []string
	for _, d := range src.Devices() {
		want = append(want, d.Name)
	}
	got := webtest.Eval[[]string](t, b, `[...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)`)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("device names on the page (sorted by name):\n%q\nwant\n%q", got, want)
	}

	// The budget's figures as the source gave them, and the projection
	// as the handler computed it.
	bud := src.Budget()
	// One look at both: the projection follows the time, and the page
	// takes a new one from every event (200 ms).
	figures := webtest.Eval[map[string]string](t, b, `Object.fromEntries(["b-today","b-limit","b-proj","b-429","b-queue","b-inflight"].map(id => [id, document.getElementById(id).textContent]).concat([["projected", String(state.budget.projected_today)]]))`)
	projected := figures["projected"]
	for id, want := range map[string]string{"b-today": "6234", "b-proj": projected, "b-429": "2", "b-queue": "3"} {
		if figures[id] != want {
			t.Errorf("%s shows %q, want %s", id, figures[id], want)
		}
	}
	if bud.RequestsToday != 6234 || !strings.Contains(figures["b-limit"], "10000") || !strings.Contains(figures["b-limit"], "3766 left") {
		t.Errorf("limit: %q", figures["b-limit"])
	}
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#chart svg g").length`); n != 24 {
		t.Errorf("chart: %d hours drawn, want 24", n)
	}
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#chart rect.s-state").length`); n < 20 {
		t.Errorf("chart: %d state bars", n)
	}
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#buckets meter").length`); n != len(bud.Buckets) {
		t.Errorf("buckets: %d meters, want %d", n, len(bud.Buckets))
	}
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#problem-list li").length`); n != 2 {
		t.Errorf("problems: %d shown, want 2", n)
	}
	b.Screenshot(t, *screenshotDir, "desktop.png", 1280, 900, false)
	b.DarkMode(t, true)
	b.Screenshot(t, *screenshotDir, "desktop-dark.png", 1280, 900, false)
	b.DarkMode(t, false)

	// A change at the source shows without a reload.
	src.update("hall_light", func(d *DeviceDetail) { d.Name = "Hall light (moved)"; d.Status = StatusOffline })
	src.setBudget(func(b *Budget) { b.RequestsToday = 7001 })
	src.problems.Add(Problem{Time: time.Now(), Level: "error", Message: "the cloud refused the API key"})
	b.WaitFor(t, "the renamed device", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Hall light (moved)")`)
	b.WaitFor(t, "the new request count", `document.getElementById("b-today").textContent === "7001"`)
	b.WaitFor(t, "the new problem", `document.querySelector("#problem-list li .msg").textContent === "The cloud refused the API key"`)
	if webtest.Eval[bool](t, b, `performance.getEntriesByType("navigation").length !== 1`) {
		t.Error("the page was reloaded")
	}

	// Sorting and filtering.
	b.Do(t, chromedp.Click(`th[data-key="name"] button`))
	if first := webtest.Eval[string](t, b, `document.querySelector("#device-rows td.name").textContent`); first != want[len(want)-1] {
		t.Errorf("sorted by name descending, first %q", first)
	}
	b.Do(t, chromedp.SendKeys(`#filter`, "kitchen"))
	if got := webtest.Eval[[]string](t, b, `[...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)`); !slices.Equal(got, []string{"Kitchen strip"}) {
		t.Errorf("filtered by kitchen: %q", got)
	}
	b.SetValue(t, "filter", "")
	b.Do(t, chromedp.Click(`th[data-key="name"] button`))

	// A row opens the device's values and capabilities; its actions work.
	b.Do(t, chromedp.Click(`#device-rows tr[data-id="hall_light"] td.name`))
	b.WaitFor(t, "the device's values", `document.getElementById("detail").open && document.getElementById("detail-values").textContent.includes("brightness")`)
	if caps := webtest.Eval[string](t, b, `document.getElementById("detail-caps").textContent`); !strings.Contains(caps, "range") || !strings.Contains(caps, "1–100") {
		t.Errorf("capabilities: %q", caps)
	}
	b.Screenshot(t, *screenshotDir, "phone-device.png", 390, 844, true)
	b.Do(t, chromedp.Click(`#a-read`))
	b.WaitFor(t, "the read's answer", `document.getElementById("toast").textContent === "Read queued."`)
	b.Allow("status of 400 (Bad Request) " + url + "/api/actions/poll-interval")
	b.SetValue(t, "a-interval-value", "1s")
	b.Do(t, chromedp.Click(`#a-interval button[type="submit"]`))
	b.WaitFor(t, "the bridge's refusal", `document.getElementById("toast").textContent.includes("2s or more")`)
	b.SetValue(t, "a-interval-value", "5m")
	b.Do(t, chromedp.Click(`#a-interval button[type="submit"]`))
	b.WaitFor(t, "the interval's answer", `document.getElementById("toast").textContent === "Poll interval set to 5m."`)
	if log := act.log(); !slices.Equal(log, []string{"read hall_light", `interval hall_light "5m"`}) {
		t.Errorf("actions: %q", log)
	}
	b.Do(t, chromedp.Click(`#detail-close`))
	b.Screenshot(t, *screenshotDir, "phone.png", 390, 844, true)
	webtest.Eval[bool](t, b, `(document.getElementById("devices").scrollIntoView(), true)`)
	b.Screenshot(t, *screenshotDir, "phone-devices.png", 390, 844, true)
	b.NoErrors(t)
}

func TestBrowserTokenNeededOffLoopback(t *testing.T) {
	const token = "correct-horse-battery"
	src, hist := demoSource(time.Now())
	act := &fakeActions{src: src}
	url := serve(t, src, act, hist, "0.0.0.0:8080", token)
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	b.WaitFor(t, "the login notice", `!document.getElementById("access").hidden && !document.getElementById("login").hidden`)
	if txt := webtest.Eval[string](t, b, `document.getElementById("access-text").textContent`); !strings.Contains(txt, "HTTP_TOKEN") {
		t.Errorf("the page does not say actions need the token: %q", txt)
	}
	if !webtest.Eval[bool](t, b, `document.getElementById("refresh").disabled`) {
		t.Error("the refresh button is enabled before login")
	}
	// A request made anyway is refused (Chromium logs the refusal).
	b.Allow("status of 401 (Unauthorized) " + url + "/api/actions/refresh")
	status := webtest.Eval[int](t, b, `fetch("api/actions/refresh", {method: "POST", headers: {"Content-Type": "application/json",
		"X-CSRF-Token": state.session.csrf_token}, body: "{}"}).then(r => r.status)`)
	if status != 401 || len(act.log()) != 0 {
		t.Errorf("an action without the token: %d, calls %q", status, act.log())
	}
	b.Do(t, chromedp.SendKeys(`#login-token`, token), chromedp.Click(`#login button[type="submit"]`))
	b.WaitFor(t, "the login", `!document.getElementById("refresh").disabled`)
	if webtest.Eval[bool](t, b, `document.cookie.includes("cloud2mqtt_session")`) {
		t.Error("the session cookie is readable by scripts")
	}
	b.Do(t, chromedp.Click(`#refresh`))
	b.WaitFor(t, "the refresh's answer", `document.getElementById("toast").textContent === "Reading the device list again."`)
	if log := act.log(); !slices.Equal(log, []string{"refresh"}) {
		t.Errorf("actions: %q", log)
	}
	if webtest.Eval[bool](t, b, `document.documentElement.outerHTML.includes(`+fmt.Sprintf("%q", token)+`)`) {
		t.Error("the page shows the token")
	}
	b.NoErrors(t)
}

func TestBrowserActionsOff(t *testing.T) {
	src, hist := demoSource(time.Now())
	url := serve(t, src, &fakeActions{src: src}, hist, ":8080", "")
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	b.WaitFor(t, "the notice", `!document.getElementById("access").hidden`)
	txt := webtest.Eval[string](t, b, `document.getElementById("access-text").textContent`)
	if !strings.Contains(txt, "Actions are off") || !strings.Contains(txt, "HTTP_ADDR=:8080") || !strings.Contains(txt, "set HTTP_TOKEN") {
		t.Errorf("notice: %q", txt)
	}
	if !webtest.Eval[bool](t, b, `[...document.querySelectorAll("button.action")].every(b => b.disabled)`) {
		t.Error("action buttons enabled while actions are off")
	}
	b.NoErrors(t)
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
	b := webtest.New(t)
	start := time.Now()
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	t.Logf("loaded in %v", time.Since(start))
	if n := webtest.Eval[int](t, b, `new Set([...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent)).size`); n != 1000 {
		t.Fatalf("%d device names on the page, want 1000", n)
	}
	for i := range 100 {
		src.update(fmt.Sprintf("light_%04d", i*10), func(d *DeviceDetail) { d.LastRead = ptr(time.Now()) })
	}
	src.update("light_0999", func(d *DeviceDetail) { d.Name = "Light 0999 (renamed)" })
	start = time.Now()
	b.WaitFor(t, "the renamed device", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Light 0999 (renamed)")`)
	t.Logf("change seen in %v", time.Since(start))
	b.NoErrors(t)
}

// TestBrowserFallsBackToPolling: when its event stream is refused (every
// slot taken), the page reads the API instead, shows every device and
// their changes, and takes the stream again once a slot is free; a light
// the LAN reaches shows "local" and the LAN's poll as its interval.
func TestBrowserFallsBackToPolling(t *testing.T) {
	src, hist := demoSource(time.Now())
	src.update("dev_0", func(d *DeviceDetail) { d.Path = "local"; d.PollInterval = Duration(10 * time.Second) })
	url := serveWith(t, Options{Source: src, Actions: &fakeActions{src: src}, History: hist, MaxStreams: 1, Fallback: 200 * time.Millisecond})
	// Someone holds the only slot.
	held, err := http.Get(url + "/api/events")
	if err != nil || held.StatusCode != 200 {
		t.Fatalf("the held stream: %v %v", held, err)
	}
	b := webtest.New(t)
	b.Allow("503 (Service Unavailable)")
	b.Allow("EventSource's response has a MIME type")
	b.Open(t, url)
	b.WaitFor(t, "the page polling", `document.getElementById("live").textContent === "polling"`)
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#device-rows tr").length`); n != len(src.Devices()) {
		t.Errorf("polling: %d devices shown, want %d", n, len(src.Devices()))
	}
	if iv := webtest.Eval[string](t, b, `document.querySelector('#device-rows tr[data-id="dev_0"] td.num').textContent`); iv != "local · 10 s" {
		t.Errorf("a local light's interval: %q, want \"local · 10 s\"", iv)
	}
	src.update("hall_light", func(d *DeviceDetail) { d.Name = "Hall light (polled)" })
	b.WaitFor(t, "a change read by polling", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Hall light (polled)")`)

	held.Body.Close()
	b.WaitFor(t, "the stream taken again", `document.getElementById("live").textContent === "live"`)
	src.update("hall_light", func(d *DeviceDetail) { d.Name = "Hall light (live)" })
	b.WaitFor(t, "a change by the stream", `[...document.querySelectorAll("#device-rows td.name")].some(e => e.textContent === "Hall light (live)")`)
	b.NoErrors(t)
}
