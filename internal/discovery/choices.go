package discovery

import (
	"strconv"
	"strings"

	"cloud2mqtt/internal/capability"
)

// choice is one option a select-like entity offers: the label Home Assistant
// shows and sends, the cloud value it stands for, and the key the state
// template derives from the reported value.
type choice struct {
	label string
	value any
	key   string
}

// scalarKey is the string Jinja's `| string` filter gives a scalar cloud
// value; ok is false for values a state template cannot match (objects).
func scalarKey(v any) (string, bool) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case string:
		return x, true
	case bool:
		if x {
			return "True", true
		}
		return "False", true
	}
	return "", false
}

// enumChoices lists an ENUM's options with unique labels.
func enumChoices(opts []capability.Option) []choice {
	used := map[string]bool{}
	var out []choice
	for _, o := range opts {
		name := strings.TrimSpace(o.Name)
		if o.Value == nil {
			continue
		}
		if name == "" {
			k, ok := scalarKey(o.Value)
			if !ok {
				continue
			}
			name = k
		}
		k, _ := scalarKey(o.Value)
		out = append(out, choice{label: uniqueName(used, name, ""), value: o.Value, key: k})
	}
	return out
}

// workMode describes a work_mode capability: its modes and, where one mode
// has a list of numeric levels (FanSpeed 1..8, gearMode Low/Medium/High),
// that mode as a speed.
type workMode struct {
	instance string
	choices  []choice // every mode, named sub-options flattened
	// speed mode, when there is one
	speedMode   int64
	speedValues []any
	hasSpeed    bool
}

// workModeOf analyses a work_mode capability. Every choice carries a
// complete {workMode, modeValue}, so it never depends on the bridge filling
// gaps.
func workModeOf(c capability.Capability) (workMode, bool) {
	wm := workMode{instance: c.Instance}
	modeField, ok := c.Parameters.Field("workMode")
	if !ok {
		return wm, false
	}
	valueField, hasValue := c.Parameters.Field("modeValue")
	dep := func(name string) (capability.Option, bool) {
		if !hasValue {
			return capability.Option{}, false
		}
		for _, o := range valueField.Options {
			if strings.EqualFold(strings.TrimSpace(o.Name), strings.TrimSpace(name)) {
				return o, true
			}
		}
		return capability.Option{}, false
	}
	type pending struct {
		mode, sub string
		value     any
		key       string
	}
	var all []pending
	count := map[string]int{}
	for _, m := range modeField.Options {
		mv, ok := m.Value.(int64)
		name := strings.TrimSpace(m.Name)
		if !ok || name == "" {
			continue
		}
		mk := strconv.FormatInt(mv, 10)
		d, hasDep := dep(name)
		named := false
		if hasDep {
			for _, s := range d.Options {
				if strings.TrimSpace(s.Name) != "" {
					named = true
				}
			}
		}
		if hasDep && !wm.hasSpeed && len(d.Options) >= 2 && allInts(d.Options) {
			wm.hasSpeed, wm.speedMode = true, mv
			for _, s := range d.Options {
				wm.speedValues = append(wm.speedValues, s.Value)
			}
		}
		if named {
			for _, s := range d.Options {
				sub := strings.TrimSpace(s.Name)
				sk, _ := scalarKey(s.Value)
				if sub == "" {
					sub = sk
				}
				all = append(all, pending{mode: name, sub: sub,
					value: map[string]any{"workMode": mv, "modeValue": s.Value}, key: mk + ":" + sk})
				count[strings.ToLower(sub)]++
			}
			continue
		}
		v := map[string]any{"workMode": mv}
		if hasDep {
			switch {
			case d.DefaultValue != nil:
				v["modeValue"] = d.DefaultValue
			case len(d.Options) > 0 && d.Options[0].Value != nil:
				v["modeValue"] = d.Options[0].Value
			case d.Range != nil:
				v["modeValue"] = int64(d.Range.Min)
			}
		} else if hasValue && valueField.DefaultValue != nil {
			v["modeValue"] = valueField.DefaultValue
		}
		all = append(all, pending{mode: name, value: v, key: mk})
		count[strings.ToLower(name)]++
	}
	used := map[string]bool{}
	for _, p := range all {
		label := p.mode
		if p.sub != "" {
			label = p.sub
			if count[strings.ToLower(p.sub)] > 1 {
				label = p.mode + " " + p.sub
			}
		}
		wm.choices = append(wm.choices, choice{label: uniqueName(used, label, ""), value: p.value, key: p.key})
	}
	return wm, len(wm.choices) > 0
}

func allInts(opts []capability.Option) bool {
	for _, o := range opts {
		if _, ok := o.Value.(int64); !ok {
			return false
		}
	}
	return true
}

// without returns the choices that do not belong to the speed mode.
func (w workMode) withoutSpeed() []choice {
	if !w.hasSpeed {
		return w.choices
	}
	prefix := strconv.FormatInt(w.speedMode, 10)
	var out []choice
	for _, c := range w.choices {
		if c.key == prefix || strings.HasPrefix(c.key, prefix+":") {
			continue
		}
		out = append(out, c)
	}
	return out
}

func labels(cs []choice) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c.label
	}
	return out
}

// commandMap is a Jinja statement setting m to label → cloud value.
func commandMap(cs []choice) string {
	m := make(map[string]any, len(cs))
	for _, c := range cs {
		m[c.label] = c.value
	}
	return "{% set m = " + jval(m) + " %}"
}

// stateMap is a Jinja statement setting s to state key → label.
func stateMap(cs []choice) string {
	m := make(map[string]any, len(cs))
	for _, c := range cs {
		if c.key != "" {
			if _, dup := m[c.key]; !dup {
				m[c.key] = c.label
			}
		}
	}
	return "{% set s = " + jval(m) + " %}"
}

// enumCommandTemplate sends the cloud value of the chosen label.
func enumCommandTemplate(cs []choice) string {
	return commandMap(cs) + "{{ m[value] | tojson }}"
}

// enumStateTemplate renders the label of the instance's reported value, or
// "None" (unknown). Object values, such as the scenes of a device without a
// light, are compared whole because a lookup by string form never matches.
func enumStateTemplate(instance string, cs []choice) string {
	for _, c := range cs {
		if c.key == "" {
			pairs := make([]any, len(cs))
			for i, c := range cs {
				pairs[i] = []any{c.label, c.value}
			}
			return "{% set s = " + jval(pairs) + " %}" +
				"{% for p in s if p[1] == " + stateGet(instance) + " %}" +
				"{% if loop.first %}{{ p[0] }}{% endif %}{% else %}None{% endfor %}"
		}
	}
	return stateMap(cs) + "{{ s.get(" + stateGet(instance) + " | string, \"None\") }}"
}

// workModeStateTemplate renders the label of the reported {workMode,
// modeValue}, matching the exact pair first and then the mode alone.
func workModeStateTemplate(instance string, cs []choice) string {
	return stateMap(cs) +
		"{% set v = " + stateGet(instance) + " %}" +
		"{% if v is mapping %}{% set k = v.get(\"workMode\") | string %}" +
		"{{ s.get(k ~ \":\" ~ (v.get(\"modeValue\") | string), s.get(k, \"None\")) }}" +
		"{% else %}None{% endif %}"
}
