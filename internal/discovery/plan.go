package discovery

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"weak"

	"cloud2mqtt/internal/capability"
)

// Roles of entities that are not named after one instance.
const (
	roleLight      = "light"
	roleNightlight = "nightlight"
	roleFan        = "fan"
	roleHumidifier = "humidifier"
	roleOnline     = "online"
)

// maxSegments caps the per-segment light entities of one device: strips
// report up to 15 segments today, and a definition claiming thousands must
// not flood Home Assistant.
const maxSegments = 32

// lightPlan is how a device's JSON light entity maps onto capabilities; the
// config, the state projection and the command decoding all derive from it,
// so they cannot disagree.
type lightPlan struct {
	role       string
	name       any // nil: the entity is the device's main feature
	power      string
	brightness *capability.Range
	rgb        bool
	ct         *capability.Range
	effects    []effect
}

// effect is one entry of a light's effect list.
type effect struct {
	name     string
	instance string
	value    any
}

// modes lists the light's supported color modes, richest first.
func (l *lightPlan) modes() []string {
	var m []string
	if l.rgb {
		m = append(m, "rgb")
	}
	if l.ct != nil {
		m = append(m, "color_temp")
	}
	if len(m) == 0 {
		if l.brightness != nil {
			m = append(m, "brightness")
		} else {
			m = append(m, "onoff")
		}
	}
	return m
}

// plan is the analysis of one device: which rich entity owns which
// capabilities; everything not owned becomes a plain entity.
type plan struct {
	dev        capability.Device
	light      *lightPlan
	kind       string // roleFan, roleHumidifier or ""
	climate    bool   // at least one temperature_setting capability
	powerOwner string // role of the entity that owns powerSwitch, "" for a switch
	owned      map[string]bool
}

func (p *plan) cap(instance string) (capability.Capability, bool) {
	return p.dev.Capability(instance)
}

func (p *plan) has(instance string) bool {
	_, ok := p.dev.Capability(instance)
	return ok
}

// intRange returns the range of an INTEGER capability, nil when it has none.
func intRange(c capability.Capability) *capability.Range {
	if c.Parameters == nil || c.Parameters.Range == nil {
		return nil
	}
	r := *c.Parameters.Range
	if r.Max <= r.Min {
		return nil
	}
	return &r
}

// lightKey names one device definition. Definitions are never changed in
// place, so the first capability's address, the length and the type
// identify one; the weak pointer keeps none alive.
type lightKey struct {
	caps weak.Pointer[capability.Capability]
	n    int
	typ  string
}

// lightPlans caches lightOf's answers (lightKey → *lightPlan, nil for none);
// an entry goes when its definition is collected.
var lightPlans sync.Map

// lightOf is analyse(dev).light, cached per definition because it runs on
// every state change and command with the same few definitions.
func lightOf(dev capability.Device) *lightPlan {
	if len(dev.Capabilities) == 0 {
		return nil // analyse finds no light without capabilities
	}
	first := &dev.Capabilities[0]
	k := lightKey{caps: weak.Make(first), n: len(dev.Capabilities), typ: dev.Type}
	if l, ok := lightPlans.Load(k); ok {
		return l.(*lightPlan)
	}
	l := analyse(dev).light
	if _, loaded := lightPlans.LoadOrStore(k, l); !loaded {
		runtime.AddCleanup(first, func(k lightKey) { lightPlans.Delete(k) }, k)
	}
	return l
}

func analyse(dev capability.Device) *plan {
	p := &plan{dev: dev, owned: map[string]bool{}}
	t := dev.Type
	known := capability.KnownDeviceType(t)
	hasColour := p.has(capability.InstanceColorRGB) || p.has(capability.InstanceColorTemperatureK)
	hasWork := p.has(capability.InstanceWorkMode)
	for _, c := range dev.Capabilities {
		if c.Type == capability.TypeTemperature && c.Parameters != nil {
			p.climate = true
		}
	}
	_, hasPower := p.cap(capability.InstancePower)

	isLight := t == capability.DeviceLight ||
		(!known && t != "devices.types.fan" && hasColour && !hasWork && !p.climate)
	switch {
	case isLight && hasPower:
		p.light = newLightPlan(p, roleLight, nil, capability.InstancePower, true)
		p.powerOwner = roleLight
	case (t == capability.DeviceHumidifier || t == capability.DeviceDehumidifier) && hasPower &&
		intRange(mustCap(p, capability.InstanceHumidity)) != nil:
		p.kind = roleHumidifier
		p.powerOwner = roleHumidifier
		p.owned[capability.InstanceHumidity] = true
		p.owned[capability.InstanceWorkMode] = hasWork
	case (t == "devices.types.fan" || t == capability.DeviceAirPurifier ||
		(!known && p.has("oscillationToggle"))) && hasPower:
		p.kind = roleFan
		p.powerOwner = roleFan
		p.owned[capability.InstanceWorkMode] = hasWork
		p.owned["oscillationToggle"] = p.has("oscillationToggle")
	case p.climate && hasPower:
		p.powerOwner = "climate"
	}
	if p.powerOwner != "" {
		p.owned[capability.InstancePower] = true
	}
	// A non-light device with a coloured nightlight: a light entity whose
	// power is the nightlight toggle.
	if p.light == nil && p.has("nightlightToggle") &&
		(hasColour || p.has(capability.InstanceBrightness)) {
		p.light = newLightPlan(p, roleNightlight, "Nightlight", "nightlightToggle", false)
	}
	if p.light != nil {
		p.owned[p.light.power] = true
		if p.light.brightness != nil {
			p.owned[capability.InstanceBrightness] = true
		}
		if p.light.rgb {
			p.owned[capability.InstanceColorRGB] = true
		}
		if p.light.ct != nil {
			p.owned[capability.InstanceColorTemperatureK] = true
		}
		for _, e := range p.light.effects {
			p.owned[e.instance] = true
		}
	}
	return p
}

func mustCap(p *plan, instance string) capability.Capability {
	c, _ := p.cap(instance)
	return c
}

func newLightPlan(p *plan, role string, name any, power string, withEffects bool) *lightPlan {
	l := &lightPlan{role: role, name: name, power: power}
	if c, ok := p.cap(capability.InstanceBrightness); ok {
		l.brightness = intRange(c)
	}
	if c, ok := p.cap(capability.InstanceColorRGB); ok && c.Parameters != nil {
		l.rgb = true
	}
	if c, ok := p.cap(capability.InstanceColorTemperatureK); ok {
		if r := intRange(c); r != nil && r.Min > 0 {
			l.ct = r
		}
	}
	if withEffects {
		l.effects = effectList(p.dev)
	}
	return l
}

// effectList gathers a light's scenes, DIY scenes and snapshots as effects.
// Names must be unique, so a later duplicate gets its kind, then a number.
func effectList(dev capability.Device) []effect {
	var out []effect
	used := map[string]bool{}
	for _, src := range []struct{ instance, mark string }{
		{capability.InstanceLightScene, ""},
		{capability.InstanceDIYScene, " (DIY)"},
		{capability.InstanceSnapshot, " (Snapshot)"},
	} {
		c, ok := dev.Capability(src.instance)
		if !ok || c.Parameters == nil {
			continue
		}
		for _, o := range c.Parameters.Options {
			name := strings.TrimSpace(o.Name)
			if name == "" || o.Value == nil {
				continue
			}
			name = uniqueName(used, name, src.mark)
			out = append(out, effect{name: name, instance: src.instance, value: o.Value})
		}
	}
	return out
}

// uniqueName returns name, or name+mark, or name+mark+" (n)", whichever is
// first unused (case-insensitively), and marks it used.
func uniqueName(used map[string]bool, name, mark string) string {
	try := []string{name}
	if mark != "" {
		try = append(try, name+mark)
	}
	for _, n := range try {
		if !used[strings.ToLower(n)] {
			used[strings.ToLower(n)] = true
			return n
		}
	}
	for i := 2; ; i++ {
		n := fmt.Sprintf("%s%s (%d)", name, mark, i)
		if !used[strings.ToLower(n)] {
			used[strings.ToLower(n)] = true
			return n
		}
	}
}

// segments returns the segment indexes a segment capability accepts:
// the segment field's option values, else its element range; capped.
func segments(c capability.Capability) []int {
	f, ok := c.Parameters.Field("segment")
	if !ok {
		return nil
	}
	var out []int
	seen := map[int]bool{}
	add := func(n int) {
		if n >= 0 && !seen[n] && len(out) < maxSegments {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, o := range f.Options {
		if v, ok := o.Value.(int64); ok {
			add(int(v))
		}
	}
	if len(f.Options) == 0 && f.ElementRange != nil {
		for n := f.ElementRange.Min; n <= f.ElementRange.Max && len(out) < maxSegments; n++ {
			add(n)
		}
	}
	return out
}

// names of instances whose humanised form would read badly.
var knownNames = map[string]string{
	capability.InstancePower:             "Power",
	capability.InstanceSensorTemperature: "Temperature",
	capability.InstanceSensorHumidity:    "Humidity",
	"carbonDioxideConcentration":         "Carbon dioxide",
	"pm25":                               "PM2.5",
	"filterLifeTime":                     "Filter life",
	"airQuality":                         "Air quality",
	"hdmiSource":                         "HDMI source",
	capability.InstanceWorkMode:          "Mode",
	capability.InstanceMusicMode:         "Music mode",
	capability.InstanceLightScene:        "Scene",
	capability.InstanceDIYScene:          "DIY scene",
	capability.InstanceSnapshot:          "Snapshot",
	capability.InstanceColorRGB:          "Colour",
	capability.InstanceColorTemperatureK: "Colour temperature",
	capability.InstanceTargetTemperature: "Target temperature",
	capability.InstanceSliderTemperature: "Water temperature",
	capability.InstanceSegmentedColorRGB: "Segment colour",
	capability.InstanceSegmentBrightness: "Segment brightness",
	capability.InstanceHumidity:          "Target humidity",
	capability.InstanceBrightness:        "Brightness",
	"oscillationToggle":                  "Oscillation",
	"nightlightToggle":                   "Nightlight",
	"nightlightScene":                    "Nightlight scene",
}

// instanceName names an instance for people: known names, "Socket N" for
// socketToggleN, else the camelCase split into words without a trailing
// "Toggle" or "Event".
func instanceName(instance string) string {
	if n, ok := knownNames[instance]; ok {
		return n
	}
	if rest, ok := strings.CutPrefix(instance, "socketToggle"); ok && rest != "" {
		return "Socket " + rest
	}
	s := instance
	for _, suf := range []string{"Toggle", "Event"} {
		if t := strings.TrimSuffix(s, suf); t != "" {
			s = t
		}
	}
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
			b.WriteRune(' ')
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		if i > 0 && unicode.IsDigit(r) && unicode.IsLetter(rs[i-1]) {
			b.WriteRune(' ')
		}
		if i == 0 {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return instance
	}
	return b.String()
}
