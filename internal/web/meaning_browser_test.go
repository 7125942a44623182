//go:build browser

package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cloud2mqtt/internal/web/webtest"
)

// TestBrowserValuesAsMeant: a person sees a colour as a swatch and hex code (not
// 16746496), temperatures with their unit, modes by name, and a problem as a
// sentence naming the device, without the log line's code or component.
func TestBrowserValuesAsMeant(t *testing.T) {
	now := time.Now()
	src, hist := demoSource(now)
	src.devices = append(src.devices, richDevice(now))
	src.problems.Add(Problem{Time: now, Level: "warning", Message: "command rejected", DeviceName: "Office heater",
		Fields: map[string]any{"device": "H7133/AA:BB", "code": 400.0, "component": "bridge", "instance": "brightness",
			"error": "brightness: 250 is above the maximum 100"}})
	src.problems.Add(Problem{Time: now.Add(-time.Second), Level: "warning", Message: "retained message ignored",
		Fields: map[string]any{"topic": "c2m/office_heater/set", "clear_with": "mosquitto_pub -r -n -t 'c2m/office_heater/set'"}})
	url := serve(t, src, &fakeActions{src: src}, hist, "", "")
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))

	// The problems: sentences, a hint, the fields out of sight.
	first := webtest.Eval[string](t, b, `document.querySelector("#problem-list li").innerText`)
	if !strings.Contains(first, "Office heater: command rejected — brightness: 250 is above the maximum 100") {
		t.Errorf("the problem reads %q", first)
	}
	for _, dump := range []string{"code", "component", "H7133/AA:BB", "400"} {
		if strings.Contains(first, dump) {
			t.Errorf("the problem shows %q: %q", dump, first)
		}
	}
	if hint := webtest.Eval[string](t, b, `document.querySelector("#problem-list li:nth-child(2) .hint").innerText`); !strings.Contains(hint, "mosquitto_pub -r -n -t 'c2m/office_heater/set'") {
		t.Errorf("the hint reads %q", hint)
	}

	// The device's values.
	b.Do(t, chromedp.Click(`#device-rows tr[data-id="office_heater"] td.name`))
	b.WaitFor(t, "the device's values", `document.getElementById("detail").open && document.getElementById("detail-values").textContent.includes("colorRgb")`)
	rows := webtest.Eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("#detail-values tr")].map(tr => [tr.cells[0].textContent, tr.cells[1].textContent]))`)
	for in, want := range map[string]string{
		"colorRgb": "#FF8800", "colorTemperatureK": "2700 K", "sensorTemperature": "21.5 °C", "targetTemperature": "22 °C · Maintain",
		"fanSpeed": "Medium", "workMode": "gearMode · High", "brightness": "80 %", "powerSwitch": "on",
	} {
		if rows[in] != want {
			t.Errorf("%s shows %q, want %q", in, rows[in], want)
		}
	}
	if strings.Contains(webtest.Eval[string](t, b, `document.getElementById("detail-values").textContent`), "16746496") {
		t.Error("the colour shows as a raw number")
	}
	swatch := webtest.Eval[string](t, b, `(() => { const r = [...document.querySelectorAll("#detail-values tr")].find(tr => tr.cells[0].textContent === "colorRgb").querySelector("svg.swatch rect"); return r ? getComputedStyle(r).fill : ""; })()`)
	if swatch != "rgb(255, 136, 0)" {
		t.Errorf("the colour's swatch is filled %q, want rgb(255, 136, 0)", swatch)
	}
	b.Screenshot(t, *screenshotDir, "values.png", 1280, 900, false)
	b.NoErrors(t)
}
