package discovery

import (
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
)

// Music mode: its members as a select, a number, a switch and a light.

// music: the music mode as a select and its sensitivity as a number. Both
// send a partial object on set/musicMode; the bridge completes it with the
// last known value and the definition's defaults (see Complete).
func (b *builder) music(c capability.Capability) {
	if c.Parameters == nil {
		return
	}
	mf, ok := c.Parameters.Field("musicMode")
	if !ok {
		return
	}
	cs := enumChoices(mf.Options)
	if len(cs) > 0 {
		b.add(&entity{component: "select", role: c.Instance, payload: map[string]any{
			"name":             instanceName(c.Instance),
			"options":          labels(cs),
			"command_topic":    b.set(c.Instance),
			"command_template": commandMap(cs) + "{{ {\"musicMode\": m[value]} | tojson }}",
			"state_topic":      b.state,
			"value_template": stateMap(cs) + "{% set v = " + stateGet(c.Instance) + " %}" +
				"{{ s.get(v.get(\"musicMode\") | string, \"None\") if v is mapping else \"None\" }}",
		}})
	}
	if sf, ok := c.Parameters.Field("sensitivity"); ok && sf.Range != nil && sf.Range.Max > sf.Range.Min {
		p := map[string]any{
			"name":             "Music sensitivity",
			"command_topic":    b.set(c.Instance),
			"command_template": "{{ {\"sensitivity\": value | round(0) | int} | tojson }}",
			"state_topic":      b.state,
			"value_template": "{% set v = " + stateGet(c.Instance) + " %}" +
				"{{ v.get(\"sensitivity\", \"None\") if v is mapping else \"None\" }}",
			"min":             sf.Range.Min,
			"max":             sf.Range.Max,
			"step":            sf.Range.Step(),
			"mode":            "slider",
			"entity_category": "config",
		}
		if u := capability.UnitSymbol(sf.Unit); u != "" {
			p["unit_of_measurement"] = u
		}
		b.add(&entity{component: "number", role: c.Instance + "_sensitivity", payload: p})
	}
	b.musicColour(c)
}

// musicColour adds the music mode's automatic colour as a switch and its
// fixed colour as a light, both sending a partial music mode on <id>/set.
// They are config entities so that "turn off the living room" does not
// switch a lamp into music mode. The colour is a template light because a
// JSON light would need state and command topics of its own; it is on while
// the fixed colour is in use.
func (b *builder) musicColour(c capability.Capability) {
	af, ok := c.Parameters.Field("autoColor")
	if !ok {
		return
	}
	on, off, ok := onOffValues(af.Options)
	if !ok {
		return
	}
	onKey, _ := scalarKey(on)
	offKey, _ := scalarKey(off)
	partial := func(members string) string {
		return "{{ {" + jstr(c.Instance) + ": {" + members + "}} | tojson }}"
	}
	member := "{% set v = " + stateGet(c.Instance) + " %}" +
		"{% set a = v.get(\"autoColor\") if v is mapping else none %}"
	b.add(&entity{component: "switch", role: c.Instance + "_autoColor", payload: map[string]any{
		"name":            "Music auto colour",
		"command_topic":   b.cfg.Layout.Set(b.id),
		"state_topic":     b.state,
		"value_template":  member + "{{ \"None\" if a is none else a }}",
		"payload_on":      string(marshal(map[string]any{c.Instance: map[string]any{"autoColor": on}})),
		"payload_off":     string(marshal(map[string]any{c.Instance: map[string]any{"autoColor": off}})),
		"state_on":        onKey,
		"state_off":       offKey,
		"entity_category": "config",
		"icon":            "mdi:palette",
	}})
	rf, ok := c.Parameters.Field("rgb")
	if !ok || rf.DataType != capability.DataInteger {
		return
	}
	rgb := "{% set v = " + stateGet(c.Instance) + " %}" +
		"{% set c = v.get(\"rgb\") if v is mapping else none %}"
	channel := func(shift int) string {
		expr := "(c % 256)"
		if shift > 0 {
			expr = "((c // " + strconv.Itoa(1<<shift) + ") % 256)"
		}
		return rgb + "{{ " + expr + " if c is number else \"None\" }}"
	}
	b.add(&entity{component: "light", role: c.Instance + "_rgb", payload: map[string]any{
		"name":          "Music colour",
		"schema":        "template",
		"command_topic": b.cfg.Layout.Set(b.id),
		"state_topic":   b.state,
		"command_on_template": "{% if red is defined and green is defined and blue is defined %}" +
			partial("\"autoColor\": "+jval(off)+", \"rgb\": (red | int) * 65536 + (green | int) * 256 + (blue | int)") +
			"{% else %}" + partial("\"autoColor\": "+jval(off)) + "{% endif %}",
		"command_off_template": partial("\"autoColor\": " + jval(on)),
		"state_template":       member + "{{ \"None\" if a is none else (\"off\" if a == " + jval(on) + " else \"on\") }}",
		"red_template":         channel(16),
		"green_template":       channel(8),
		"blue_template":        channel(0),
		"entity_category":      "config",
		"icon":                 "mdi:palette",
	}})
}

// onOffValues returns the values of an ENUM's "on" and "off" options
// (autoColor: on=1, off=0); ok is false unless there are exactly those two.
func onOffValues(opts []capability.Option) (on, off any, ok bool) {
	if len(opts) != 2 {
		return nil, nil, false
	}
	var hasOn, hasOff bool
	for _, o := range opts {
		if _, scalar := scalarKey(o.Value); !scalar {
			return nil, nil, false
		}
		switch strings.ToLower(strings.TrimSpace(o.Name)) {
		case "on":
			on, hasOn = o.Value, true
		case "off":
			off, hasOff = o.Value, true
		}
	}
	return on, off, hasOn && hasOff
}
