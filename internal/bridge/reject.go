package bridge

// Rejections go to <id>/error (bridge/error for an unknown id) and the log.
// Anyone who can publish can send commands, so both are bounded: values are
// clipped, answers and log lines rate limited, and no topic is named by an id
// the sender chose.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// Bounds of what a rejection echoes.
const (
	// MaxPayload is the largest command or request payload the bridge
	// reads; a larger one is refused before it is parsed.
	MaxPayload = 64 << 10
	// maxEchoedValue bounds the rejected value in <id>/error and the log.
	maxEchoedValue = 256
	// maxErrorText bounds an error's text in <id>/error and the log (a
	// message may quote the value or list a device's instances).
	maxErrorText = 512
	// maxEchoedID bounds an unknown device's id in answers and logs, since the
	// sender chose it; real ids are about 25 characters.
	maxEchoedID = 64
)

// Default rates of rejections (Options.RejectRate and friends).
const (
	DefaultRejectRate     = 2  // answers a second per device
	DefaultRejectBurst    = 20 // answers at once per device: more than a set object of every instance
	DefaultRejectLogRate  = 5  // log lines a second for the whole bridge
	DefaultRejectLogBurst = 20
)

// errorJSON is the <id>/error payload, and bridge/error's for an unknown id
// (Device shortened). A non-zero Rejected means it stands for that many
// rejections, with the fields of the last.
type errorJSON struct {
	Device   string `json:"device,omitempty"`
	Instance string `json:"instance"`
	Value    any    `json:"value"`
	Error    string `json:"error"`
	Code     int    `json:"code"`
	Rejected int    `json:"rejected,omitempty"`
}

// rejection is one refused or failed command, kept unformatted until it is
// answered (most of a flood is only counted).
type rejection struct {
	id       string
	dev      string // for the log
	instance string
	value    any
	err      error
}

// rejects rate-limits the answers on <id>/error (per device; every unknown
// id shares one budget) and the log lines of rejections.
type rejects struct {
	mu       sync.Mutex
	rate     rate.Limit
	burst    int
	devices  map[string]*rejectBudget
	log      *rate.Limiter
	unlogged int
}

type rejectBudget struct {
	lim        *rate.Limiter
	suppressed int
	last       rejection
	pending    bool // a summary is scheduled
}

func newRejects(o Options) *rejects {
	r := &rejects{rate: o.RejectRate, burst: o.RejectBurst, devices: map[string]*rejectBudget{}}
	if r.rate <= 0 {
		r.rate = DefaultRejectRate
	}
	if r.burst <= 0 {
		r.burst = DefaultRejectBurst
	}
	lr, lb := o.RejectLogRate, o.RejectLogBurst
	if lr <= 0 {
		lr = DefaultRejectLogRate
	}
	if lb <= 0 {
		lb = DefaultRejectLogBurst
	}
	r.log = rate.NewLimiter(lr, lb)
	return r
}

// unknownKey is the one budget of every id that names no device.
const unknownKey = "\x00unknown"

// reject answers a rejected or failed command on <id>/error and logs it,
// within the rates; known is false when id names no device.
func (b *Bridge) reject(id string, dev capability.Device, instance string, value any, err error) {
	b.rejectAs(id, true, dev, instance, value, err)
}

func (b *Bridge) rejectAs(id string, known bool, dev capability.Device, instance string, value any, err error) {
	rj := rejection{id: id, dev: dev.String(), instance: instance, value: value, err: err}
	key := id
	if !known {
		key = unknownKey
	}
	r := b.rejects
	r.mu.Lock()
	bud := r.devices[key]
	if bud == nil {
		bud = &rejectBudget{lim: rate.NewLimiter(r.rate, r.burst)}
		r.devices[key] = bud
	}
	answer := bud.lim.Allow()
	var wait time.Duration
	schedule := false
	if !answer {
		bud.suppressed++
		bud.last = rj
		if !bud.pending {
			bud.pending, schedule = true, true
			wait = bud.lim.Reserve().Delay() // the summary's token
		}
	}
	logIt := r.log.Allow()
	unlogged := 0
	if logIt {
		unlogged, r.unlogged = r.unlogged, 0
	} else {
		r.unlogged++
	}
	r.mu.Unlock()

	if answer {
		b.answer(rj, 0)
	} else if schedule {
		time.AfterFunc(max(wait, time.Millisecond), func() { b.summarize(key) })
	}
	if logIt {
		e := b.log.Warn().Str("device", rj.dev).Str("instance", clip(instance, maxEchoedValue)).Int("code", errorCode(err)).
			Str("error", clip(UserText(err), maxErrorText))
		if unlogged > 0 {
			e = e.Int("unlogged_before", unlogged)
		}
		e.Msg("command rejected")
	}
}

// summarize answers, in one message, the rejections of a budget that were
// not answered one by one.
func (b *Bridge) summarize(key string) {
	r := b.rejects
	r.mu.Lock()
	bud := r.devices[key]
	n, last := bud.suppressed, bud.last
	bud.suppressed, bud.last, bud.pending = 0, rejection{}, false
	r.mu.Unlock()
	if n > 0 {
		b.answer(last, n)
	}
}

// answer publishes one clipped rejection: on <id>/error for a known device,
// else on bridge/error with the id shortened; n > 0 makes it a summary of n.
func (b *Bridge) answer(rj rejection, n int) {
	e := errorJSON{Instance: clip(rj.instance, maxEchoedValue), Value: clipValue(rj.value),
		Error: clip(UserText(rj.err), maxErrorText), Code: errorCode(rj.err)}
	if n > 0 {
		e.Rejected = n
		e.Error = strconv.Itoa(n) + " commands rejected in a burst, answered in this one message; the last: " + e.Error
	}
	t := b.opt.Layout.BridgeError()
	k, id, known := b.mirror.keyOf(rj.id)
	if known {
		t = b.opt.Layout.Error(id)
	} else {
		e.Device = clip(rj.id, maxEchoedID)
	}
	p, _ := json.Marshal(e)
	b.mirror.send([]message{{t, p, false}})
	if known && b.opt.OnError != nil {
		var read readFailure
		b.opt.OnError(k, e.Instance, errors.As(rj.err, &read), e.Error)
	}
}

// readFailure marks the answer to a <id>/get read, which a later good read
// clears (Options.OnError).
type readFailure struct{ error }

func (r readFailure) Unwrap() error { return r.error }

// goPrefixes are our packages' error prefixes, which help a developer but
// mean nothing to a user.
var goPrefixes = []string{"bridge: ", "capability: ", "cloud: ", "discovery: ", "lan: ", "local: ",
	"poller: ", "registry: ", "scheduler: ", "settings: "}

// UserText is an error as a user reads it: its text without our packages'
// prefixes, wherever a wrapped error starts. The error itself keeps them.
func UserText(err error) string {
	if _, ok := err.(*capability.ValueError); ok {
		return err.Error() // the value language's own words: no prefix
	}
	s := err.Error()
	for changed := true; changed; {
		changed = false
		for _, p := range goPrefixes {
			if !strings.Contains(s, p) {
				continue
			}
			t := strings.TrimPrefix(s, p)
			for _, sep := range []string{": ", "; ", "("} {
				t = strings.ReplaceAll(t, sep+p, sep)
			}
			if t != s {
				s, changed = t, true
			}
		}
	}
	return s
}

// clip shortens s to at most max bytes (at a character boundary), marking
// the cut and the full size.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "… (" + strconv.Itoa(len(s)) + " bytes, cut)"
}

// clipped is a value already cut to size (the start of a payload too large
// to read).
type clipped string

// clipPayload is the start of a payload, marked as cut with its full size.
func clipPayload(p []byte) clipped {
	if len(p) <= maxEchoedValue {
		return clipped(strings.ToValidUTF8(string(p), "\uFFFD"))
	}
	return clipped(clipHead(p))
}

// clipHead is clip for a byte slice without converting all of it.
func clipHead(p []byte) string {
	cut := maxEchoedValue
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(p[:cut]), "\uFFFD") + "… (" + strconv.Itoa(len(p)) + " bytes, cut)"
}

// clipValue is v for <id>/error: itself when its JSON is short, else the
// start of its JSON (or of the string) as a string, marked as cut.
func clipValue(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case clipped:
		return string(v)
	case string:
		return clip(v, maxEchoedValue)
	case []byte:
		return clip(string(v), maxEchoedValue)
	}
	p, err := json.Marshal(v)
	if err != nil {
		return clip(fmt.Sprint(v), maxEchoedValue)
	}
	if len(p) <= maxEchoedValue {
		return json.RawMessage(p)
	}
	return clip(string(p), maxEchoedValue)
}

// errorCode maps an error onto the HTTP-like code of the error topic.
func errorCode(err error) int {
	var coded codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	var ve *capability.ValueError
	if errors.As(err, &ve) {
		return ve.Code()
	}
	var ae *cloud.APIError
	if errors.As(err, &ae) {
		if ae.Code != 0 {
			return ae.Code
		}
		if ae.HTTPStatus != 0 {
			return ae.HTTPStatus
		}
	}
	switch {
	case errors.Is(err, scheduler.ErrAuthHoldoff):
		return 401 // held back because the cloud refused the key: as the refusal itself
	case errors.Is(err, scheduler.ErrQuotaSpent):
		return 429 // held back because the account's quota is spent: as the cloud's refusal
	case errors.Is(err, scheduler.ErrOverloaded):
		return 503
	case errors.Is(err, scheduler.ErrClosed), errors.Is(err, scheduler.ErrNotSent):
		return 503
	}
	return 500
}

// badFormat classifies a payload that could not be decoded as the cloud's
// "invalid parameter format" (code 400), keeping its message.
func badFormat(err error) error {
	var ve *capability.ValueError
	if errors.As(err, &ve) {
		return err
	}
	return &capability.ValueError{Category: capability.CategoryFormat, Msg: err.Error()}
}

// controllable lists the instances a device accepts commands for.
func controllable(d capability.Device) []string {
	var out []string
	for _, c := range d.Capabilities {
		if c.Controllable() {
			out = append(out, c.Instance)
		}
	}
	return out
}

// codedError is an error of the bridge's own with the code of the error
// topic.
type codedError struct {
	msg  string
	code int
}

func (e codedError) Error() string { return e.msg }

func unknownDevice(id, list string) error {
	return codedError{"unknown device " + strconv.Quote(clip(id, maxEchoedID)) + ": it is not in the cloud's device list; check the id in " + list, 404}
}

func tooLarge(n int) error {
	return codedError{fmt.Sprintf("the payload is %d bytes, over the %d KiB a command or request may have; it was not read", n, MaxPayload>>10), 413}
}
