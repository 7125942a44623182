package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
)

// devCheck checks the entities of one device.
type devCheck struct {
	c   *checker
	dev capability.Device
	id  string
	r   *devResult
}

// simValue is the simulated device's stored value of an instance.
func (d *devCheck) simValue(inst string) any {
	v, _ := d.c.sim.Value(d.dev.Device, inst)
	return v
}

// reported tells whether the state endpoint reports the instance (scenes,
// segments and music settings it does not).
func (d *devCheck) reported(inst string) bool {
	st, err := d.c.sim.State(d.dev.Device)
	if err != nil {
		return false
	}
	_, ok := st.Values()[inst]
	return ok
}

// bridgeValues is the bridge's retained state object of the device.
func (d *devCheck) bridgeValues() map[string]any {
	m, ok := d.c.st.get(d.c.layout.State(d.id))
	if !ok {
		return nil
	}
	v, err := capability.Normalize(m.payload)
	if err != nil {
		return nil
	}
	out, _ := v.(map[string]any)
	return out
}

// contains: want equals v, or (objects) every member of want equals v's.
func contains(v, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return capability.Equal(v, want)
	}
	vm, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k, x := range wm {
		if !capability.Equal(vm[k], x) {
			return false
		}
	}
	return true
}

// wantValue: the simulated device holds want (contains), and so does the
// bridge's state topic when the cloud reports the instance.
func (d *devCheck) wantValue(inst string, want any) error {
	want = capability.NormalizeValue(want)
	if v := d.simValue(inst); !contains(v, want) {
		return fmt.Errorf("simulator %s = %s, want %s", inst, js(v), js(want))
	}
	if d.reported(inst) {
		if v := d.bridgeValues()[inst]; !contains(v, want) {
			return fmt.Errorf("bridge state %s = %s, want %s", inst, js(v), js(want))
		}
	}
	return nil
}

func (d *devCheck) wantState(eid, want string) error {
	if s, _ := d.c.haState(eid); s != want {
		return fmt.Errorf("Home Assistant %s state %q, want %q", eid, s, want)
	}
	return nil
}

func (d *devCheck) wantAttr(eid, name string, want any) error {
	got := d.c.haAttr(eid, name)
	if js(got) != js(want) {
		// numbers: 40 and 40.0 are the same
		if g, ok := got.(float64); ok {
			if w, ok := toFloat(want); ok && g == w {
				return nil
			}
		}
		return fmt.Errorf("Home Assistant %s %s = %s, want %s", eid, name, js(got), js(want))
	}
	return nil
}

func (d *devCheck) wantAttrNear(eid, name string, want, tol float64) error {
	g, ok := toFloat(d.c.haAttr(eid, name))
	if !ok || math.Abs(g-want) > tol {
		return fmt.Errorf("Home Assistant %s %s = %s, want %v±%v", eid, name, js(d.c.haAttr(eid, name)), want, tol)
	}
	return nil
}

// control is the last successful control of inst since t.
func (d *devCheck) control(inst string, since time.Time) (cloudsim.ControlRecord, bool) {
	var out cloudsim.ControlRecord
	found := false
	for _, rec := range d.c.sim.ControlLog() {
		if rec.Device == d.dev.Device && rec.Instance == inst && rec.Code == 200 && !rec.Time.Before(since) {
			out, found = rec, true
		}
	}
	return out, found
}

func all(errs ...func() error) error {
	for _, f := range errs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// call makes Home Assistant call a service on an entity and waits until
// want holds.
func (d *devCheck) call(eid, action string, data map[string]any, want func(since time.Time) error) {
	d.r.mu.Lock()
	d.r.tried++
	d.r.mu.Unlock()
	label := action + " " + eid
	if len(data) > 0 {
		label += " " + js(data)
	}
	since := time.Now()
	err := d.c.serialCall(action, eid, data)
	if err == nil {
		err = eventually(d.c.timeout, func() error { return want(since) })
	}
	d.record(label, err)
}

// record counts one service call's outcome in the report.
func (d *devCheck) record(label string, err error) {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	if err != nil {
		d.r.failures = append(d.r.failures, label+": "+err.Error())
		d.r.calls = append(d.r.calls, "✗ "+label)
		return
	}
	d.r.worked++
	d.r.calls = append(d.r.calls, "✓ "+label)
}

// checkAll checks the state of every enabled entity against the simulator
// and drives every platform through Home Assistant.
func (d *devCheck) checkAll(ents []*haEntity) {
	for _, e := range ents {
		if !e.enabled {
			continue
		}
		switch e.component {
		case "binary_sensor":
			d.connectivity(e)
		case "sensor":
			d.sensor(e)
		case "switch":
			d.switchEntity(e)
		case "light":
			d.light(e)
		case "select":
			d.selectEntity(e)
		case "number":
			d.number(e)
		case "climate":
			d.climate(e)
		case "fan":
			d.fan(e)
		case "humidifier":
			d.humidifier(e)
		case "event":
			d.event(e)
		default:
			d.r.fail("%s: the check knows no %s platform", e.id, e.component)
		}
	}
}

func (d *devCheck) state(e *haEntity, f func() error) {
	if err := eventually(d.c.timeout, f); err != nil {
		d.r.fail("%s state: %v", e.id, err)
	}
}

func (d *devCheck) connectivity(e *haEntity) {
	d.state(e, func() error {
		on, _ := d.bridgeValues()[capability.InstanceOnline].(bool)
		want := "off"
		if on {
			want = "on"
		}
		return d.wantState(e.id, want)
	})
}

func (d *devCheck) sensor(e *haEntity) {
	d.state(e, func() error {
		v, ok := toFloat(d.bridgeValues()[e.object])
		s, _ := d.c.haState(e.id)
		h, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || h != v {
			return fmt.Errorf("Home Assistant %q, bridge %s = %s", s, e.object, js(d.bridgeValues()[e.object]))
		}
		return nil
	})
}

func onOff(v int64) string {
	if v == 1 {
		return "on"
	}
	return "off"
}

func (d *devCheck) switchEntity(e *haEntity) {
	inst := e.object
	d.state(e, func() error { return d.wantState(e.id, onOff(toInt(d.simValue(inst)))) })
	first := int64(1 - toInt(d.simValue(inst)))
	if first != 0 && first != 1 {
		first = 1
	}
	for _, v := range []int64{first, 1 - first} {
		action := "switch.turn_off"
		if v == 1 {
			action = "switch.turn_on"
		}
		d.call(e.id, action, nil, func(time.Time) error {
			return all(func() error { return d.wantValue(inst, v) },
				func() error { return d.wantState(e.id, onOff(v)) })
		})
	}
}

// powerOf names the instance a light entity switches.
func powerOf(e *haEntity) string {
	if e.object == "nightlight" {
		return "nightlightToggle"
	}
	return capability.InstancePower
}

func (d *devCheck) light(e *haEntity) {
	if strings.HasPrefix(e.object, "segment_") {
		return // disabled by default; see segment
	}
	power := powerOf(e)
	d.state(e, func() error {
		if err := d.wantState(e.id, onOff(toInt(d.simValue(power)))); err != nil {
			m, _ := d.c.st.get(d.c.layout.Light(d.id))
			return fmt.Errorf("%w; the bridge's retained %s is %s", err, d.c.layout.Light(d.id), m.payload)
		}
		return nil
	})
	modes := e.list("supported_color_modes")
	on := func() error {
		return all(func() error { return d.wantValue(power, 1) }, func() error { return d.wantState(e.id, "on") })
	}

	if b, _ := e.cfg["brightness"].(bool); b {
		scale, ok := e.num("brightness_scale")
		if !ok {
			scale = 255
		}
		want := math.Floor(102.0 / 255 * scale) // 40 % is brightness 102 in Home Assistant
		d.call(e.id, "light.turn_on", map[string]any{"brightness_pct": 40}, func(time.Time) error {
			return all(on, func() error {
				v, _ := toFloat(d.simValue(capability.InstanceBrightness))
				if math.Abs(v-want) > 1 {
					return fmt.Errorf("simulator brightness %v, want %v±1", v, want)
				}
				return nil
			}, func() error {
				if err := d.wantAttrNear(e.id, "brightness", 102, 3); err != nil {
					m, _ := d.c.st.get(d.c.layout.Light(d.id))
					return fmt.Errorf("%w; the bridge's retained %s is %s", err, d.c.layout.Light(d.id), m.payload)
				}
				return nil
			})
		})
	} else {
		d.call(e.id, "light.turn_on", nil, func(time.Time) error { return on() })
	}
	if slicesContains(modes, "rgb") {
		d.call(e.id, "light.turn_on", map[string]any{"rgb_color": []int{255, 100, 20}}, func(time.Time) error {
			return all(on, func() error { return d.wantValue(capability.InstanceColorRGB, 0xFF6414) },
				func() error { return d.wantAttr(e.id, "color_mode", "rgb") },
				func() error { return d.wantAttr(e.id, "rgb_color", []any{255.0, 100.0, 20.0}) })
		})
	}
	if slicesContains(modes, "color_temp") {
		lo, hi := kelvinBounds(e)
		k1 := roundIn(lo+(hi-lo)/3, lo, hi)
		k3 := roundIn(lo+2*(hi-lo)/3, lo, hi)
		ct := func(k int64) func(time.Time) error {
			return func(time.Time) error {
				return all(on, func() error { return d.wantValue(capability.InstanceColorTemperatureK, k) },
					func() error { return d.wantAttr(e.id, "color_mode", "color_temp") },
					func() error { return d.wantAttr(e.id, "color_temp_kelvin", k) })
			}
		}
		d.call(e.id, "light.turn_on", map[string]any{"color_temp_kelvin": k1}, ct(k1))
		// the mireds argument of 2025.1 (deprecated there): pick a mired value whose kelvin is whole
		for _, m := range []int64{250, 200, 400, 320, 160, 500, 125} {
			if k := 1_000_000 / m; k >= lo && k <= hi && k != k1 {
				d.call(e.id, "light.turn_on", map[string]any{"color_temp": m}, ct(k))
				break
			}
		}
		d.call(e.id, "light.turn_on", map[string]any{"kelvin": k3}, ct(k3))
	}
	if fx := e.list("effect_list"); len(fx) > 0 {
		name := fx[len(fx)/2]
		d.call(e.id, "light.turn_on", map[string]any{"effect": name}, func(since time.Time) error {
			return all(on, func() error { return d.wantAttr(e.id, "effect", name) }, func() error {
				for _, inst := range []string{capability.InstanceLightScene, capability.InstanceDIYScene, capability.InstanceSnapshot} {
					if rec, ok := d.control(inst, since); ok {
						if v := d.simValue(inst); !capability.Equal(v, rec.Value) {
							return fmt.Errorf("simulator %s = %s after control %s", inst, js(v), js(rec.Value))
						}
						return nil
					}
				}
				return fmt.Errorf("no scene control reached the simulator")
			})
		})
	}
	d.call(e.id, "light.turn_off", nil, func(time.Time) error {
		return all(func() error { return d.wantValue(power, 0) }, func() error { return d.wantState(e.id, "off") })
	})
}

// kelvinBounds is the colour temperature range Home Assistant offers for a
// light: from the mired bounds (every release reads them), else kelvin.
func kelvinBounds(e *haEntity) (int64, int64) {
	if lo, ok := e.num("max_mireds"); ok {
		if hi, ok := e.num("min_mireds"); ok {
			return int64(1e6 / lo), int64(1e6 / hi)
		}
	}
	lo, _ := e.num("min_kelvin")
	hi, _ := e.num("max_kelvin")
	return int64(lo), int64(hi)
}

// roundIn rounds k to a multiple of 100 inside [lo, hi].
func roundIn(k, lo, hi int64) int64 {
	r := (k + 50) / 100 * 100
	if r < lo || r > hi {
		return k
	}
	return r
}

// segment drives one segment light (enabled after the restart): a colour
// on every segment (brightness where segments have no colour), brightness
// and off on the first.
func (d *devCheck) segment(e *haEntity, first bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(e.object, "segment_"))
	if err != nil {
		d.r.fail("%s: not a segment_<n> object id", e.id)
		return
	}
	seg := []any{int64(n)}
	rec := func(inst string, want map[string]any) func(time.Time) error {
		return func(since time.Time) error {
			r, ok := d.control(inst, since)
			if !ok {
				return fmt.Errorf("no %s control reached the simulator", inst)
			}
			if !contains(r.Value, capability.NormalizeValue(want)) {
				return fmt.Errorf("simulator got %s %s, want %s", inst, js(r.Value), js(want))
			}
			return nil
		}
	}
	modes := e.list("supported_color_modes")
	if slicesContains(modes, "rgb") {
		d.call(e.id, "light.turn_on", map[string]any{"rgb_color": []int{0, 0, 255}}, func(since time.Time) error {
			return all(func() error {
				return rec(capability.InstanceSegmentedColorRGB, map[string]any{"segment": seg, "rgb": 255})(since)
			},
				func() error { return d.wantState(e.id, "on") })
		})
	}
	hasBright, _ := e.cfg["brightness"].(bool)
	if !first && (slicesContains(modes, "rgb") || !hasBright) {
		return
	}
	if hasBright {
		scale, _ := e.num("brightness_scale")
		want := int64(math.Floor(128.0 / 255 * scale))
		d.call(e.id, "light.turn_on", map[string]any{"brightness": 128}, func(since time.Time) error {
			return all(func() error {
				r, ok := d.control(capability.InstanceSegmentBrightness, since)
				if !ok {
					return fmt.Errorf("no segment brightness control reached the simulator")
				}
				m, _ := r.Value.(map[string]any)
				if !capability.Equal(m["segment"], seg) || math.Abs(float64(toInt(m["brightness"])-want)) > 1 {
					return fmt.Errorf("simulator got %s, want segment %d brightness %d±1", js(r.Value), n, want)
				}
				return nil
			}, func() error { return d.wantState(e.id, "on") })
		})
	}
	if !first {
		return
	}
	d.call(e.id, "light.turn_off", nil, func(since time.Time) error {
		_, okB := d.control(capability.InstanceSegmentBrightness, since)
		_, okC := d.control(capability.InstanceSegmentedColorRGB, since)
		if !okB && !okC {
			return fmt.Errorf("no segment control reached the simulator")
		}
		return d.wantState(e.id, "off")
	})
}

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

// offline takes the device offline in the simulator: its connectivity
// sensor says so and its other entities become unavailable; then back.
func (d *devCheck) offline(ents []*haEntity) {
	var conn, other *haEntity
	for _, e := range ents {
		if e.node != d.id || !e.enabled {
			continue
		}
		if e.component == "binary_sensor" && e.object == "online" {
			conn = e
		} else if other == nil {
			other = e
		}
	}
	if conn == nil || other == nil {
		return
	}
	for _, online := range []bool{false, true} {
		d.r.mu.Lock()
		d.r.tried++
		d.r.mu.Unlock()
		label := fmt.Sprintf("simulator: device online=%v", online)
		err := d.c.sim.SetOnline(d.dev.Device, online)
		if err == nil {
			err = eventually(d.c.timeout, func() error {
				if online {
					return all(func() error { return d.wantState(conn.id, "on") }, func() error {
						if s, _ := d.c.haState(other.id); s == "unavailable" {
							return fmt.Errorf("%s still unavailable", other.id)
						}
						return nil
					})
				}
				return all(func() error { return d.wantState(conn.id, "off") }, func() error { return d.wantState(other.id, "unavailable") })
			})
		}
		d.r.mu.Lock()
		if err != nil {
			d.r.failures = append(d.r.failures, label+": "+err.Error())
			d.r.calls = append(d.r.calls, "✗ "+label)
		} else {
			d.r.worked++
			d.r.calls = append(d.r.calls, "✓ "+label)
		}
		d.r.mu.Unlock()
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func toInt(v any) int64 {
	f, ok := toFloat(v)
	if !ok {
		return -1
	}
	return int64(f)
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
