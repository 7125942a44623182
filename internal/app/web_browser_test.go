//go:build browser

package app_test

// The status page in a real headless Chromium against the whole daemon: every
// device by name, today's requests as bridge/stats and the cloud count them, a
// cloud change shown without a reload, an action refused without the token off
// loopback, and no console error. Run with
//
//	go test -tags browser -run Browser ./internal/app
//
// and -args -screenshots ../../docs/screenshots to renew the docs' screenshots.

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/topic"
	"cloud2mqtt/internal/web/webtest"
)

var screenshotDir = flag.String("screenshots", "", "write the status page's screenshots to this directory (../../docs/screenshots to update them)")

func TestBrowserStatusPage(t *testing.T) {
	t.Parallel()
	h := startPage(t, harnessOptions{
		// The demo's interval and no daily limit, as the demo: every
		// device read each minute of the clock, which the test jumps to
		// the reads it waits for.
		env: map[string]string{"POLL_INTERVAL": "60s"},
		sim: cloudsim.Options{Catalogue: cloudsim.DemoCatalogue()},
	})
	h.devices()
	b := webtest.New(t)
	b.Open(t, h.main.HTTPURL()+"/")

	// Every device of the catalogue, by name.
	var want []string
	for _, d := range h.sim.Devices() {
		want = append(want, d.Name)
	}
	slices.Sort(want)
	names := `[...document.querySelectorAll("#device-rows td.name")].map(e => e.textContent).sort()`
	b.WaitFor(t, "every device of the catalogue", fmt.Sprintf(`JSON.stringify(%s) === %q`, names, toJSON(want)))

	// Today's requests: the page, the retained bridge/stats and the
	// cloud's own count agree once all three have caught up: the clock
	// jumps to the stats (they follow the count within seconds of it),
	// then stands (no read is due for a minute) while the page follows.
	var shown, stats, cloud int
	h.jumpUntil(wait, time.Second, "bridge/stats and the cloud agreeing on today's requests", func() bool {
		return statsRequests(h) > 0 && statsRequests(h) == simRequests(h)
	})
	h.watch.until(wait, "the page, bridge/stats and the cloud agreeing on today's requests", func() bool {
		shown, _ = strconv.Atoi(webtest.Eval[string](t, b, `document.getElementById("b-today").textContent`))
		stats, cloud = statsRequests(h), simRequests(h)
		return shown > 0 && shown == stats && stats == cloud
	})
	t.Logf("requests today: page %d, bridge/stats %d, cloud %d", shown, stats, cloud)
	if lim := webtest.Eval[string](t, b, `document.getElementById("b-limit").textContent`); lim != "no daily limit set" {
		t.Errorf("the daily limit shows %q", lim)
	}
	if n := webtest.Eval[int](t, b, `document.querySelectorAll("#chart rect.s-state").length`); n < 1 {
		t.Error("the chart shows no state reads")
	}

	// A change at the cloud, without a reload, within 5 s of the bridge
	// reading it (at its next read: the clock jumps to it).
	dev := h.sim.Devices()[1]
	id := topic.DeviceID(dev.SKU, dev.Device)
	if err := h.sim.SetOnline(dev.Device, false); err != nil {
		t.Fatal(err)
	}
	h.availabilityJumping(time.Second, "offline", id)
	b.WaitFor(t, dev.Name+" offline", fmt.Sprintf(`!!document.querySelector('#device-rows tr[data-id=%q] .badge.st-offline')`, id))
	if webtest.Eval[bool](t, b, `performance.getEntriesByType("navigation").length !== 1`) {
		t.Error("the page was reloaded")
	}

	// An action through the page: a rejected command shows as a problem
	// (a sentence naming the device) and as the device's last error; read
	// now is queued.
	light := h.sim.Devices()[0]
	lightID := topic.DeviceID(light.SKU, light.Device)
	h.publish("cloud2mqtt/"+lightID+"/set/brightness", "250")
	b.WaitFor(t, "the rejected command among the problems, naming the light", fmt.Sprintf(
		`[...document.querySelectorAll("#problem-list li .msg")].some(e => e.textContent.startsWith(%q))`, light.Name+": command rejected — "))
	b.Do(t, chromedp.Click(fmt.Sprintf(`#device-rows tr[data-id=%q] td.name`, lightID)))
	b.WaitFor(t, "the device's values", `document.getElementById("detail").open && document.getElementById("detail-values").textContent.includes("brightness")`)
	valuesAsMeant(t, h, b, light)
	b.Do(t, chromedp.Click(`#a-read`))
	b.WaitFor(t, "the read's answer", `document.getElementById("toast").textContent === "Read queued."`)

	// The screenshots (into a temporary directory unless -screenshots):
	// the phone's layout is drawn too. For docs/, once the pace is
	// measured (a whole minute after the start), so that the projection
	// shows.
	if *screenshotDir != "" {
		h.jumpUntil(2*time.Minute, time.Second, "the pace measured", func() bool {
			return apiGet[struct {
				Pace *float64 `json:"pace_per_hour"`
			}](t, h, "/api/budget").Pace != nil
		})
		b.WaitFor(t, "the projection", `document.getElementById("b-proj").textContent !== "–"`)
	}
	b.Screenshot(t, *screenshotDir, "phone-device.png", 390, 844, true)
	b.Do(t, chromedp.Click(`#detail-close`))
	b.Screenshot(t, *screenshotDir, "desktop.png", 1280, 900, false)
	b.DarkMode(t, true)
	b.Screenshot(t, *screenshotDir, "desktop-dark.png", 1280, 900, false)
	b.DarkMode(t, false)
	b.Screenshot(t, *screenshotDir, "phone.png", 390, 844, true)
	webtest.Eval[bool](t, b, `(document.getElementById("devices").scrollIntoView(), true)`)
	b.Screenshot(t, *screenshotDir, "phone-devices.png", 390, 844, true)
	b.NoErrors(t)
}

// TestBrowserActionNeedsTheToken: bound to an address that is not
// loopback, the page says actions need HTTP_TOKEN, one made without it is
// refused, and after the login the page's button works.
func TestBrowserActionNeedsTheToken(t *testing.T) {
	t.Parallel()
	const token = "browser-token-3e9f1a"
	h := startPage(t, harnessOptions{env: map[string]string{"HTTP_TOKEN": token},
		sim: cloudsim.Options{Catalogue: firstDevices(2)}})
	h.devices()
	url := h.main.HTTPURL()
	b := webtest.New(t)
	b.Open(t, url+"/")
	b.WaitFor(t, "the login notice", `!document.getElementById("access").hidden && !document.getElementById("login").hidden`)
	if txt := webtest.Eval[string](t, b, `document.getElementById("access-text").textContent`); !strings.Contains(txt, "HTTP_TOKEN") {
		t.Errorf("the page does not say actions need the token: %q", txt)
	}
	lists := func() int { return h.sim.Counts().Total("devices") }
	before := lists()
	b.Allow("status of 401 (Unauthorized) " + url + "/api/actions/refresh")
	status := webtest.Eval[int](t, b, `fetch("api/actions/refresh", {method: "POST", headers: {"Content-Type": "application/json",
		"X-CSRF-Token": state.session.csrf_token}, body: "{}"}).then(r => r.status)`)
	if status != 401 || lists() != before {
		t.Errorf("an action without the token: %d, device lists %d → %d", status, before, lists())
	}
	b.Do(t, chromedp.SendKeys(`#login-token`, token), chromedp.Click(`#login button[type="submit"]`))
	b.WaitFor(t, "the login", `!document.getElementById("refresh").disabled`)
	b.Do(t, chromedp.Click(`#refresh`))
	b.WaitFor(t, "the refresh's answer", `document.getElementById("toast").textContent === "Reading the device list again."`)
	h.watch.until(wait, "the device list read again", func() bool { return lists() > before })
	b.NoErrors(t)
}

// TestBrowserIngress: the page in a frame of Home Assistant's page, through a
// stand-in for the ingress proxy: every device, a live change, an action without
// HTTP_TOKEN, no request outside the ingress path and no console error; the
// ingress port reached from another address is refused.
func TestBrowserIngress(t *testing.T) {
	t.Parallel()
	h, proxy := startIngress(t, harnessOptions{env: map[string]string{"POLL_INTERVAL": "2s"},
		sim: cloudsim.Options{Catalogue: firstDevices(4)}}, "browser-ingress-token-1b2c")
	h.devices()
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(proxy.URL+ingressPanel))
	const doc = `document.getElementById("panel").contentDocument`
	b.WaitFor(t, "the page in the frame", doc+` && `+doc+`.body && `+doc+`.body.dataset.ready === "1"`)

	var want []string
	for _, d := range h.sim.Devices() {
		want = append(want, d.Name)
	}
	slices.Sort(want)
	names := `[...` + doc + `.querySelectorAll("#device-rows td.name")].map(e => e.textContent).sort()`
	b.WaitFor(t, "every device", fmt.Sprintf(`JSON.stringify(%s) === %q`, names, toJSON(want)))
	b.WaitFor(t, "the live stream", doc+`.getElementById("live").textContent === "live"`)

	// A change at the cloud, live, once the bridge read it (the clock
	// jumps to its next read).
	dev := h.sim.Devices()[2]
	if err := h.sim.SetOnline(dev.Device, false); err != nil {
		t.Fatal(err)
	}
	h.availabilityJumping(time.Second, "offline", topic.DeviceID(dev.SKU, dev.Device))
	b.WaitFor(t, dev.Name+" offline", fmt.Sprintf(`!!%s.querySelector('#device-rows tr[data-id=%q] .badge.st-offline')`, doc, topic.DeviceID(dev.SKU, dev.Device)))

	// An action, without logging in: Home Assistant authenticated the user.
	lists := func() int { return h.sim.Counts().Total("devices") }
	before := lists()
	if webtest.Eval[bool](t, b, doc+`.getElementById("refresh").disabled`) {
		t.Fatal("the refresh button is disabled through ingress")
	}
	webtest.Eval[bool](t, b, `(`+doc+`.getElementById("refresh").click(), true)`)
	b.WaitFor(t, "the refresh's answer", doc+`.getElementById("toast").textContent === "Reading the device list again."`)
	h.watch.until(wait, "the device list read again", func() bool { return lists() > before })

	// Not one request outside the ingress path.
	if out := proxy.outside(); len(out) > 0 {
		t.Errorf("the proxy was asked for paths outside the ingress path: %q", out)
	}
	urls := webtest.Eval[[]string](t, b, `[...document.getElementById("panel").contentWindow.performance.getEntriesByType("resource"),
		...document.getElementById("panel").contentWindow.performance.getEntriesByType("navigation")].map(e => e.name)`)
	for _, u := range urls {
		if !strings.HasPrefix(u, proxy.URL+ingressPrefix+"/") {
			t.Errorf("the page asked for %s, outside %s", u, ingressPrefix)
		}
	}
	t.Logf("the proxy saw %d requests, the frame made %d", len(proxy.seen()), len(urls))

	// The ingress port, straight from another address: refused.
	if code, body := getFrom(t, "127.0.0.1", h.main.IngressURL()+"/"); code != 403 || strings.Contains(body, "<html") {
		t.Errorf("the ingress port from 127.0.0.1: %d %.80s", code, body)
	}
	b.NoErrors(t)
}

// valuesAsMeant: the open device's values as a person reads them: its
// colour as the hex code and a swatch of it, never the cloud's number;
// then a thermometer's temperature with its unit and a work mode by its
// name (the demo's devices, as the simulated cloud holds them).
func valuesAsMeant(t *testing.T, h *harness, b *webtest.Browser, light capability.Device) {
	t.Helper()
	row := func(instance string) string {
		return webtest.Eval[string](t, b, fmt.Sprintf(`(() => { const tr = [...document.querySelectorAll("#detail-values tr")].find(tr => tr.cells[0].textContent === %q); return tr ? tr.cells[1].textContent : ""; })()`, instance))
	}
	rgb, _ := h.sim.Value(light.Device, capability.InstanceColorRGB)
	n, _ := rgb.(int64)
	hex := fmt.Sprintf("#%06X", n)
	if got := row(capability.InstanceColorRGB); got != hex {
		t.Errorf("%s's colour shows %q, want %s (the cloud's %v)", light.Name, got, hex, rgb)
	}
	fill := webtest.Eval[string](t, b, `(() => { const r = document.querySelector("#detail-values svg.swatch rect"); return r ? r.getAttribute("fill") : ""; })()`)
	if fill != hex {
		t.Errorf("the colour's swatch is filled %q, want %s", fill, hex)
	}
	b.Do(t, chromedp.Click(`#detail-close`))
	for _, d := range h.sim.Devices() {
		var want string
		instance := capability.InstanceSensorTemperature
		if c, ok := d.Capability(capability.InstanceWorkMode); ok {
			v, _ := h.sim.Value(d.Device, capability.InstanceWorkMode)
			m, _ := v.(map[string]any)
			f, _ := c.Parameters.Field("workMode")
			for _, o := range f.Options {
				if capability.Equal(o.Value, m["workMode"]) {
					want, instance = o.Name, capability.InstanceWorkMode
				}
			}
		} else if _, ok := d.Capability(instance); ok {
			want = " °C"
		}
		if want == "" {
			continue
		}
		id := topic.DeviceID(d.SKU, d.Device)
		// Clicked by script: a row may lie under the sticky header.
		webtest.Eval[bool](t, b, fmt.Sprintf(`(document.querySelector('#device-rows tr[data-id=%q] td.name').click(), true)`, id))
		b.WaitFor(t, d.Name+"'s values", fmt.Sprintf(`document.getElementById("detail").open && document.getElementById("detail-name").textContent === %q`, d.Name))
		if got := row(instance); !strings.Contains(got, want) {
			t.Errorf("%s's %s shows %q, want it to say %q; the values: %s", d.Name, instance, got, want,
				webtest.Eval[string](t, b, `document.getElementById("detail-values").textContent`))
		}
		b.Do(t, chromedp.Click(`#detail-close`))
	}
	b.Do(t, chromedp.Click(fmt.Sprintf(`#device-rows tr[data-id=%q] td.name`, topic.DeviceID(light.SKU, light.Device))))
	b.WaitFor(t, light.Name+"'s values again", fmt.Sprintf(`document.getElementById("detail").open && document.getElementById("detail-name").textContent === %q`, light.Name))
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
