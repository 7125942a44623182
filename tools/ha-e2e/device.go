package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
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
			if _, ok := musicMember(e); ok {
				d.musicAutoColour(e)
				continue
			}
			d.switchEntity(e)
		case "light":
			if _, ok := musicMember(e); ok {
				d.musicColour(e)
				continue
			}
			d.light(e)
		case "button":
			d.readNow(e)
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
