// Package webtest drives a real headless Chromium for the tests of the
// status page (internal/web over a fake bridge, internal/app over the
// daemon and the simulator): it collects every console error, warning and
// uncaught exception (which includes every Content-Security-Policy
// violation), waits for the page's own events and takes screenshots.
// Chromium is Debian's chromium package, or $CHROMIUM. Only tests import it.
package webtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChangeWithin is how soon a change must show on the page: the issue's
// 5 s.
const ChangeWithin = 5 * time.Second

// Browser is one headless Chromium and the console errors of its page.
type Browser struct {
	ctx     context.Context
	mu      sync.Mutex
	errs    []string
	allowed []string // console lines expected by the test
}

// Chromium is the browser's path; the test fails without one.
func Chromium(t testing.TB) string {
	t.Helper()
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

// New starts a headless Chromium for the test's duration.
func New(t testing.TB) *Browser {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(Chromium(t)),
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
	b := &Browser{ctx: ctx}
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
	b.Do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	}))
	return b
}

// Do runs steps with a deadline (the browser itself lives as long as the
// test).
func (b *Browser) Do(t testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// Open loads url at a desktop's size and waits until the page has drawn
// its first data (body[data-ready]).
func (b *Browser) Open(t testing.TB, url string) {
	t.Helper()
	b.Do(t, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitReady(`body[data-ready="1"]`))
}

// Eval evaluates js in the page (awaiting a promise) and returns its value.
func Eval[T any](t testing.TB, b *Browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// WaitFor waits until the page's expression is true: the page's own
// events (a server-sent event, a fetch) make it so, within ChangeWithin.
func (b *Browser) WaitFor(t testing.TB, what, js string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(ChangeWithin))); err != nil {
		t.Fatalf("%s: not seen within %v: %v", what, ChangeWithin, err)
	}
}

// DarkMode emulates the system's dark colour scheme.
func (b *Browser) DarkMode(t testing.TB, on bool) {
	t.Helper()
	v := "light"
	if on {
		v = "dark"
	}
	b.Do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
		return err
	}))
}

// SetValue sets an input's value as typing would (an input event).
func (b *Browser) SetValue(t testing.TB, id, v string) {
	t.Helper()
	Eval[bool](t, b, fmt.Sprintf(`(e => { e.value = %q; return e.dispatchEvent(new Event("input")) })(document.getElementById(%q))`, v, id))
}

// Allow expects a console line (a refusal the test provokes).
func (b *Browser) Allow(substr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, substr)
}

// NoErrors fails the test for every console line not allowed.
func (b *Browser) NoErrors(t testing.TB) {
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

// Screenshot writes the page, width × height (a phone's screen when
// mobile, else the whole page), as dir/name; dir "" is a temporary
// directory (the screenshot is still taken: it must work).
func (b *Browser) Screenshot(t testing.TB, dir, name string, width, height int64, mobile bool) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait}
	}
	b.Do(t, chromedp.EmulateViewport(width, height, opts...))
	// Let the layout settle on the new width: the next animation frame.
	Eval[bool](t, b, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// A phone shows its screen (the page is long); a desktop the page.
	Eval[bool](t, b, `(document.getElementById("toast").hidden = true)`)
	shot := chromedp.FullScreenshot(100)
	if mobile {
		shot = chromedp.CaptureScreenshot()
	} else {
		// The whole page from its top: the sticky header where it belongs.
		Eval[bool](t, b, `(window.scrollTo(0, 0), true)`)
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
