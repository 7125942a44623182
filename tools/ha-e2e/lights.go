package main

// Lights and segment lights, as a user's clicks in Home Assistant drive them.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"cloud2mqtt/internal/capability"
)

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
