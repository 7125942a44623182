//go:build browser

package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cloud2mqtt/internal/web/webtest"
)

// The budget shows the quota the cloud told (its limit, what is left,
// when it renews) and the forecast: when it runs out at the current pace.
func TestBrowserQuota(t *testing.T) {
	now := time.Now()
	src, hist := demoSource(now)
	src.mu.Lock()
	fits := false
	reset, runsOut := now.Add(2*time.Minute), now.Add(time.Minute)
	src.budget.DailyLimit = 0
	src.budget.Quota = &Quota{Limit: 45, Remaining: 5, Reset: &reset, Source: "learned", Fits: &fits, RunsOut: &runsOut, PacePerHour: 900}
	src.mu.Unlock()
	url := serve(t, src, &fakeActions{src: src}, hist, "", "")
	b := webtest.New(t)
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
	figures := webtest.Eval[map[string]string](t, b, `Object.fromEntries(["b-limit","b-pace"].map(id => [id, document.getElementById(id).textContent]))`)
	if l := figures["b-limit"]; !strings.Contains(l, "of 45 (the cloud's quota)") || !strings.Contains(l, "5 left") || !strings.Contains(l, "renews ") {
		t.Errorf("b-limit: %q", l)
	}
	if p := figures["b-pace"]; !strings.Contains(p, "the quota runs out at ") {
		t.Errorf("b-pace: %q", p)
	}
	if c := webtest.Eval[string](t, b, `document.getElementById("b-progress").className`); c != "warn" {
		t.Errorf("the bar of a quota 40 of 45 spent: class %q, want warn", c)
	}
}
