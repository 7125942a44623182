package main

// Selects, numbers, climates, fans, humidifiers and events.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/discovery"
)

// choose returns the first option that is not cur.
func choose(opts []string, cur string) (string, bool) {
	for _, o := range opts {
		if o != cur {
			return o, true
		}
	}
	return "", false
}

func (d *devCheck) selectEntity(e *haEntity) {
	opts := e.list("options")
	inst := strings.TrimSuffix(e.object, "_sensitivity")
	m := parseSetMap(e.str("command_template"), "m")
	d.state(e, func() error {
		s, _ := d.c.haState(e.id)
		if s == "unknown" && !d.reported(inst) {
			return nil // the cloud never reports it (scenes): unknown until set
		}
		if !slicesContains(opts, s) {
			return fmt.Errorf("Home Assistant %s state %q is not one of %v (simulator %s = %s)", e.id, s, opts, inst, js(d.simValue(inst)))
		}
		return nil
	})
	cur, _ := d.c.haState(e.id)
	// two different options, so the second call changes something too
	var tries []string
	if o, ok := choose(opts, cur); ok {
		tries = append(tries, o)
		if o2, ok := choose(opts, o); ok && len(opts) > 2 {
			tries = append(tries, o2)
		}
	}
	for _, o := range tries {
		want, ok := m[o]
		if strings.Contains(e.str("command_template"), `"musicMode": m[value]`) {
			want = map[string]any{"musicMode": want}
		}
		d.call(e.id, "select.select_option", map[string]any{"option": o}, func(time.Time) error {
			return all(func() error {
				if !ok {
					return fmt.Errorf("cannot read the option table of %s", e.id)
				}
				return d.wantValue(inst, want)
			}, func() error { return d.wantState(e.id, o) })
		})
	}
}

func (d *devCheck) number(e *haEntity) {
	inst := e.object
	sub := ""
	if s, ok := strings.CutSuffix(e.object, "_sensitivity"); ok {
		inst, sub = s, "sensitivity"
	}
	lo, _ := e.num("min")
	hi, _ := e.num("max")
	step, ok := e.num("step")
	if !ok || step <= 0 {
		step = 1
	}
	cur := func() any {
		v := d.simValue(inst)
		if sub != "" {
			m, _ := v.(map[string]any)
			return m[sub]
		}
		return v
	}
	if sub == "" || d.reported(inst) {
		// (the cloud does not report music settings: unknown until set)
		d.state(e, func() error {
			want, ok := toFloat(cur())
			s, _ := d.c.haState(e.id)
			h, err := strconv.ParseFloat(s, 64)
			if !ok || err != nil || h != want {
				return fmt.Errorf("Home Assistant %q, simulator %s = %s", s, inst, js(cur()))
			}
			return nil
		})
	}
	v := lo + step*math.Round((hi-lo)/2/step)
	if c, ok := toFloat(cur()); ok && c == v {
		v = lo + step*math.Round((hi-lo)/4/step)
	}
	var want any = int64(v)
	if sub != "" {
		want = map[string]any{sub: int64(v)}
	}
	d.call(e.id, "number.set_value", map[string]any{"value": v}, func(time.Time) error {
		return all(func() error { return d.wantValue(inst, want) }, func() error {
			s, _ := d.c.haState(e.id)
			if h, err := strconv.ParseFloat(s, 64); err != nil || h != v {
				return fmt.Errorf("Home Assistant %s state %q, want %v", e.id, s, v)
			}
			return nil
		})
	})
}

func (d *devCheck) climate(e *haEntity) {
	inst := e.object
	temp := func() any { m, _ := d.simValue(inst).(map[string]any); return m["temperature"] }
	d.state(e, func() error { return d.wantAttr(e.id, "temperature", temp()) })
	if e.str("current_temperature_topic") != "" {
		d.state(e, func() error {
			return d.wantAttr(e.id, "current_temperature", d.bridgeValues()[capability.InstanceSensorTemperature])
		})
	}
	modes := e.list("modes")
	if slicesContains(modes, "off") {
		d.state(e, func() error {
			want := "off"
			if toInt(d.simValue(capability.InstancePower)) == 1 {
				want = "heat"
			}
			return d.wantState(e.id, want)
		})
		for _, m := range []string{"off", "heat"} {
			d.call(e.id, "climate.set_hvac_mode", map[string]any{"hvac_mode": m}, func(time.Time) error {
				return all(func() error { return d.wantValue(capability.InstancePower, map[string]int64{"off": 0, "heat": 1}[m]) },
					func() error { return d.wantState(e.id, m) })
			})
		}
	}
	lo, _ := e.num("min_temp")
	hi, _ := e.num("max_temp")
	step, ok := e.num("temp_step")
	if !ok || step <= 0 {
		step = 1
	}
	t := lo + step*math.Round((hi-lo)/2/step)
	if c, ok := toFloat(temp()); ok && c == t {
		t += step
	}
	d.call(e.id, "climate.set_temperature", map[string]any{"temperature": t}, func(time.Time) error {
		return all(func() error { return d.wantValue(inst, map[string]any{"temperature": int64(t)}) },
			func() error { return d.wantAttr(e.id, "temperature", t) })
	})
}

func (d *devCheck) fan(e *haEntity) {
	inst := capability.InstanceWorkMode
	d.state(e, func() error { return d.wantState(e.id, onOff(toInt(d.simValue(capability.InstancePower)))) })
	d.call(e.id, "fan.turn_on", nil, func(time.Time) error {
		return all(func() error { return d.wantValue(capability.InstancePower, 1) }, func() error { return d.wantState(e.id, "on") })
	})
	if e.str("percentage_command_topic") != "" {
		levels := parseSetMap(e.str("percentage_command_template"), "m")
		n, _ := e.num("speed_range_max")
		for _, pct := range []float64{100, 50} {
			level := int(math.Ceil(pct / 100 * n))
			d.call(e.id, "fan.set_percentage", map[string]any{"percentage": pct}, func(time.Time) error {
				return all(func() error {
					return d.wantValue(inst, map[string]any{"modeValue": levels[strconv.Itoa(level)]})
				}, func() error { return d.wantAttrNear(e.id, "percentage", float64(level)*100/n, 1) })
			})
		}
	}
	if presets := e.list("preset_modes"); len(presets) > 0 {
		m := parseSetMap(e.str("preset_mode_command_template"), "m")
		cur, _ := d.c.haAttr(e.id, "preset_mode").(string)
		if p, ok := choose(presets, cur); ok {
			d.call(e.id, "fan.set_preset_mode", map[string]any{"preset_mode": p}, func(time.Time) error {
				return all(func() error { return d.wantValue(inst, m[p]) }, func() error { return d.wantAttr(e.id, "preset_mode", p) })
			})
		}
	}
	if e.str("oscillation_command_topic") != "" {
		for _, v := range []bool{true, false} {
			d.call(e.id, "fan.oscillate", map[string]any{"oscillating": v}, func(time.Time) error {
				want := int64(0)
				if v {
					want = 1
				}
				return all(func() error { return d.wantValue("oscillationToggle", want) }, func() error { return d.wantAttr(e.id, "oscillating", v) })
			})
		}
	}
	d.call(e.id, "fan.turn_off", nil, func(time.Time) error {
		return all(func() error { return d.wantValue(capability.InstancePower, 0) }, func() error { return d.wantState(e.id, "off") })
	})
}

func (d *devCheck) humidifier(e *haEntity) {
	d.state(e, func() error {
		return all(func() error { return d.wantState(e.id, onOff(toInt(d.simValue(capability.InstancePower)))) },
			func() error { return d.wantAttr(e.id, "humidity", d.simValue(capability.InstanceHumidity)) })
	})
	if e.str("current_humidity_topic") != "" {
		// Home Assistant's MQTT humidifier rounds the current humidity
		d.state(e, func() error {
			v, _ := toFloat(d.bridgeValues()[capability.InstanceSensorHumidity])
			return d.wantAttrNear(e.id, "current_humidity", v, 0.5)
		})
	}
	d.call(e.id, "humidifier.turn_on", nil, func(time.Time) error {
		return all(func() error { return d.wantValue(capability.InstancePower, 1) }, func() error { return d.wantState(e.id, "on") })
	})
	lo, _ := e.num("min_humidity")
	hi, _ := e.num("max_humidity")
	h := math.Round((lo + hi) / 2)
	if c, ok := toFloat(d.simValue(capability.InstanceHumidity)); ok && c == h {
		h++
	}
	d.call(e.id, "humidifier.set_humidity", map[string]any{"humidity": h}, func(time.Time) error {
		return all(func() error { return d.wantValue(capability.InstanceHumidity, int64(h)) }, func() error { return d.wantAttr(e.id, "humidity", h) })
	})
	if modes := e.list("modes"); len(modes) > 0 {
		m := parseSetMap(e.str("mode_command_template"), "m")
		cur, _ := d.c.haAttr(e.id, "mode").(string)
		if md, ok := choose(modes, cur); ok {
			d.call(e.id, "humidifier.set_mode", map[string]any{"mode": md}, func(time.Time) error {
				return all(func() error { return d.wantValue(capability.InstanceWorkMode, m[md]) }, func() error { return d.wantAttr(e.id, "mode", md) })
			})
		}
	}
	d.call(e.id, "humidifier.turn_off", nil, func(time.Time) error {
		return all(func() error { return d.wantValue(capability.InstancePower, 0) }, func() error { return d.wantState(e.id, "off") })
	})
}

// event publishes a device event as the bridge does (discovery.EventPayload
// on <base>/<id>/event) and expects the event entity to fire.
func (d *devCheck) event(e *haEntity) {
	c, ok := d.dev.Capability(e.object)
	if !ok || c.EventState == nil || len(c.EventState.Options) == 0 {
		d.r.fail("%s: the device has no event options for %s", e.id, e.object)
		return
	}
	o := c.EventState.Options[0]
	d.r.mu.Lock()
	d.r.tried++
	d.r.mu.Unlock()
	label := fmt.Sprintf("event %s on %s", js(o.Name), d.c.layout.Event(d.id))
	err := publish(d.c.cl, d.c.layout.Event(d.id), discovery.EventPayload(e.object, o), false)
	if err == nil {
		err = eventually(d.c.timeout, func() error {
			return all(func() error { return d.wantAttr(e.id, "event_type", o.Name) }, func() error {
				if s, _ := d.c.haState(e.id); s == "unknown" || s == "" {
					return fmt.Errorf("Home Assistant %s state %q", e.id, s)
				}
				return nil
			})
		})
	}
	d.record(label, err)
}
