// Package web is the bridge's status page and the JSON API behind it (devices,
// the request budget, recent problems, live updates and a few actions) on
// HTTP_ADDR beside /healthz and /metrics, and in Home Assistant's sidebar. It
// also guards the whole endpoint against a hostile home network (security.go).
//
// It knows nothing of MQTT: internal/statuspage fills Source and carries out
// Actions on the same code paths as the MQTT requests. The page is one embedded
// HTML file, style sheet and script, with no CDN and no build chain. It edits
// no settings beyond a device's enabled flag and poll interval.
package web

import (
	"errors"
	"strconv"
	"time"

	"cloud2mqtt/internal/capability"
)

// Source is what the page shows, read only when a client asks, so nothing is
// read while nobody watches. Methods must be safe for concurrent use and should
// return copies.
type Source interface {
	// Devices lists the account's devices in the cloud's order.
	Devices() []Device
	// Device is one device with its current values and capabilities;
	// false when id names none.
	Device(id string) (DeviceDetail, bool)
	// Budget is the request budget as the scheduler counts it. The handler
	// adds the hourly history and the projection to midnight.
	Budget() Budget
	// Problems are the recent warnings and errors, in any order (the
	// handler sorts them newest first). ProblemLog keeps them.
	Problems() []Problem
}

// Actions are the page's buttons, each taking the same path as the equivalent
// MQTT request. An error's text is shown to the user, so it should say what to
// do; ErrUnknownDevice (wrapped or not) becomes 404.
type Actions interface {
	// ReadNow queues a state read of the device (<id>/get over MQTT); it
	// returns once queued, the result arrives as a change of the device.
	ReadNow(id string) error
	// SetEnabled enables or disables polling and discovery of a device
	// (device/options {"disabled": !enabled}).
	SetEnabled(id string, enabled bool) error
	// SetPollInterval sets the device's own poll interval as typed ("2m"); ""
	// returns it to the bridge's interval.
	SetPollInterval(id string, interval string) error
	// RefreshDevices reads the device list again (bridge/request/refresh).
	RefreshDevices() error
	// RepublishDiscovery publishes every discovery config again
	// (bridge/request/republish).
	RepublishDiscovery() error
}

// ErrUnknownDevice is what Actions return for an id that names no device.
var ErrUnknownDevice = errors.New("no device has this id; the ids are those of /api/devices")

// Device is one row of the devices table (/api/devices).
type Device struct {
	// ID is the device's topic id (<base>/<id>), unique and stable.
	ID string `json:"id"`
	// Name is the display name (the user's, else the cloud's).
	Name string `json:"name"`
	// Model is the cloud's sku, Type its device type
	// (devices.types.light...).
	Model string `json:"model"`
	Type  string `json:"type"`
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// Disabled is a device the user asked not to read.
	Disabled bool `json:"disabled"`
	// Path is how the device is reached: "cloud" or "local".
	Path string `json:"path"`
	// LastRead is when a read last succeeded; nil when never.
	LastRead *time.Time `json:"last_read"`
	// PollInterval is the interval in force (with any back-off), OwnInterval
	// whether it is the device's own setting, and PollWhy the poller's reason.
	PollInterval Duration `json:"poll_interval"`
	OwnInterval  bool     `json:"own_interval"`
	PollWhy      string   `json:"poll_why,omitempty"`
	// LastError is the latest error still standing (DeviceErrors); "" when none.
	LastError string `json:"last_error"`
}

// Device statuses.
const (
	StatusOnline      = "online"      // the last read worked and the cloud said online
	StatusOffline     = "offline"     // the cloud said offline
	StatusUnreachable = "unreachable" // reads keep failing
	StatusUnknown     = "unknown"     // not read yet
)

// DeviceDetail is one device with its values (/api/devices/{id}).
type DeviceDetail struct {
	Device
	// Values are the current values by instance, normalised as the
	// registry keeps them.
	Values map[string]any `json:"values"`
	// Capabilities are the device's capability definitions, as listed.
	Capabilities []capability.Capability `json:"capabilities"`
	// Readings are the values as a person reads them, by instance (the
	// handler fills them from Values and Capabilities).
	Readings []Reading `json:"readings"`
}

// Budget is what the scheduler counts of the request budget.
type Budget struct {
	// RequestsToday counts requests sent since local midnight; DailyLimit
	// is the configured limit (0: none).
	RequestsToday int `json:"requests_today"`
	DailyLimit    int `json:"daily_limit"`
	// RateLimited counts 429 answers since the start, Last429 the last.
	RateLimited uint64     `json:"rate_limited"`
	Last429     *time.Time `json:"last_429"`
	// QueueDepth is the requests waiting for budget, InFlight those on
	// the wire.
	QueueDepth int `json:"queue_depth"`
	InFlight   int `json:"in_flight"`
	// PollInterval is the bridge's planned interval for online devices.
	PollInterval Duration `json:"poll_interval"`
	// Buckets are the token buckets' fill.
	Buckets []Bucket `json:"buckets"`
	// Quota is the account's binding quota (the cloud's or CLOUD_DAILY_LIMIT,
	// whichever is smaller) with its forecast; nil while none is known.
	Quota *Quota `json:"quota"`
}

// Quota is the request quota that binds now.
type Quota struct {
	// Limit is the requests of its window (0: the cloud said only what
	// is left), Remaining those left, Reset when it renews (nil: unknown).
	Limit     int        `json:"limit"`
	Remaining int        `json:"remaining"`
	Reset     *time.Time `json:"reset"`
	// Source is "learned" (the cloud's rate-limit headers) or
	// "configured" (CLOUD_DAILY_LIMIT).
	Source string `json:"source"`
	// Fits says whether the last ten minutes' pace fits what is left until Reset
	// (nil until measured); RunsOut is when it runs out if not.
	Fits        *bool      `json:"fits"`
	RunsOut     *time.Time `json:"runs_out"`
	PacePerHour float64    `json:"pace_per_hour"`
}

// Bucket is one token bucket: Tokens left of Capacity.
type Bucket struct {
	// Name says which (e.g. "state (fewest of any device)").
	Name     string  `json:"name"`
	Tokens   float64 `json:"tokens"`
	Capacity float64 `json:"capacity"`
}

// Problem is one warning or error, as bridge/logging publishes it, and
// as a person reads it.
type Problem struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"` // "warning", "error", "fatal" or "panic"
	Message string    `json:"message"`
	// Fields are the log line's other fields (device, error, ...).
	Fields map[string]any `json:"fields,omitempty"`
	// DeviceName is the name of the device the "device" field refers to, as the
	// page shows it; "" when the Source knows none.
	DeviceName string `json:"device_name,omitempty"`
	// DeviceRefs are what the log line may call that device instead (its
	// sku/device, its topic id): the sentence names it by DeviceName.
	DeviceRefs []string `json:"-"`
	// Text is the problem in a person's words ("Hall lamp: command rejected —
	// brightness: 250 is above the maximum 100").
	Text string `json:"text"`
	// Hint is what to do where the log line says it (its clear_with or
	// hint field): a command to run, a setting to change.
	Hint string `json:"hint,omitempty"`
}

// Duration is a time.Duration written in JSON as whole seconds.
type Duration time.Duration

// MarshalJSON writes the duration as seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}
