package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/discovery"
	"cloud2mqtt/internal/topic"
)

const prefix = discovery.DefaultPrefix + "/"

type checker struct {
	cl      paho.Client
	st      *store
	sim     *cloudsim.Sim
	ha      *hass
	timeout time.Duration
	logf    func(string, ...any)
	layout  topic.Layout
	callMu  sync.Mutex
	// dailyLimit is the bridge's CLOUD_DAILY_LIMIT (0: none).
	dailyLimit int
}

// serialCall hands Home Assistant one service call at a time: the e2e
// automation runs in mode single and drops a call that arrives while the
// previous one runs ("Already running" in its log).
func (c *checker) serialCall(action, eid string, data map[string]any) error {
	c.callMu.Lock()
	defer c.callMu.Unlock()
	for try := 0; ; try++ {
		if err := callService(c.cl, action, eid, data); err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		if !c.ha.newLogContains("e2e command driver: Already running") || try == 3 {
			if try > 0 {
				c.logf("%s %s: sent %d times (the automation was still running)", action, eid, try+1)
			}
			return nil
		}
	}
}

// haEntity is one discovery config the bridge published and what Home
// Assistant made of it.
type haEntity struct {
	component, node, object string
	cfg                     map[string]any
	uid                     string
	id                      string // entity id
	enabled                 bool
}

func (e *haEntity) str(k string) string { s, _ := e.cfg[k].(string); return s }
func (e *haEntity) num(k string) (float64, bool) {
	f, ok := e.cfg[k].(float64)
	return f, ok
}
func (e *haEntity) list(k string) []string {
	var out []string
	l, _ := e.cfg[k].([]any)
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// configs returns the non-empty discovery configs on the broker by topic.
func (c *checker) configs() map[string]message {
	out := map[string]message{}
	for t, m := range c.st.prefixed(prefix) {
		if strings.HasSuffix(t, "/config") && len(m.payload) > 0 {
			out[t] = m
		}
	}
	return out
}

func (c *checker) entities() ([]*haEntity, error) {
	var out []*haEntity
	for t, m := range c.configs() {
		parts := strings.Split(strings.TrimPrefix(t, prefix), "/")
		if len(parts) != 4 {
			return nil, fmt.Errorf("ha-e2e: unexpected discovery topic %s", t)
		}
		var cfg map[string]any
		if err := json.Unmarshal(m.payload, &cfg); err != nil {
			return nil, fmt.Errorf("ha-e2e: discovery payload on %s is not JSON: %w", t, err)
		}
		e := &haEntity{component: parts[0], node: parts[1], object: parts[2], cfg: cfg, enabled: true}
		e.uid, _ = cfg["unique_id"].(string)
		obj, _ := cfg["object_id"].(string)
		e.id = e.component + "." + obj
		if v, ok := cfg["enabled_by_default"].(bool); ok && !v {
			e.enabled = false
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// waitDiscovery waits until the bridge published configs for every device of
// the simulator and they have been stable for five seconds (scene lists
// arrive after the device list and change the lights' effect lists).
func (c *checker) waitDiscovery(ctx context.Context, bridge *proc) error {
	deadline := time.Now().Add(120 * time.Second)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if bridge.exited() {
			return fmt.Errorf("ha-e2e: the bridge exited; see its log")
		}
		cfgs := c.configs()
		var missing []string
		for _, d := range c.sim.Devices() {
			id := topic.DeviceID(d.SKU, d.Device)
			found := false
			for t := range cfgs {
				if strings.Contains(t, "/"+id+"/") {
					found = true
					break
				}
			}
			if !found {
				missing = append(missing, id)
			}
		}
		var newest time.Time
		for _, m := range cfgs {
			if m.at.After(newest) {
				newest = m.at
			}
		}
		if len(missing) == 0 && len(cfgs) > 0 && time.Since(newest) > 5*time.Second {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ha-e2e: the bridge published no discovery for %v within 2 minutes", missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// bridgeConfigsSeen tells whether the bridge's own device (its diagnostic
// sensors) has discovery configs on the broker.
func (c *checker) bridgeConfigsSeen() bool {
	ids := map[string]bool{}
	for _, d := range c.sim.Devices() {
		ids[topic.DeviceID(d.SKU, d.Device)] = true
	}
	for t := range c.configs() {
		if parts := strings.Split(t, "/"); len(parts) == 5 && !ids[parts[2]] {
			return true
		}
	}
	return false
}

// haState is Home Assistant's state of an entity (mqtt_statestream).
func (c *checker) haState(eid string) (string, bool) {
	m, ok := c.st.get("hastate/" + strings.Replace(eid, ".", "/", 1) + "/state")
	if !ok {
		return "", false
	}
	return string(m.payload), true
}

// haAttr is one attribute of an entity, JSON-decoded.
func (c *checker) haAttr(eid, name string) any {
	m, ok := c.st.get("hastate/" + strings.Replace(eid, ".", "/", 1) + "/" + name)
	if !ok {
		return nil
	}
	var v any
	if json.Unmarshal(m.payload, &v) != nil {
		return string(m.payload)
	}
	return v
}

// devResult is what the report says about one device (or the bridge).
type devResult struct {
	id, name, sku string
	configs       int
	created       int // in Home Assistant's entity registry
	disabled      int // created disabled (enabled_by_default false)
	withState     int // enabled entities with a state
	tried, worked int
	calls         []string // "✓ light.turn_on {...}" lines
	failures      []string
	mu            sync.Mutex
}

func (r *devResult) fail(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, a...))
}

type report struct {
	catalogue, work, port string
	devices               []*devResult
	logProblems           []string
	notes                 []string
	started               time.Time
}

func (r *report) failed() bool {
	if len(r.logProblems) > 0 {
		return true
	}
	for _, d := range r.devices {
		if len(d.failures) > 0 {
			return true
		}
	}
	return false
}

func (r *report) write(w io.Writer, o options) {
	fmt.Fprintf(w, "## %s\n\n", r.catalogue)
	fmt.Fprintf(w, "Run %s, Home Assistant 2025.1.4 (ha-check), logs in %s.\n\n", r.started.UTC().Format("2006-01-02 15:04 MST"), r.work)
	fmt.Fprintln(w, "| device | model | configs | entities created (disabled) | with state | service calls tried | worked |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var tc, tcr, tdis, tws, tt, tw int
	for _, d := range r.devices {
		fmt.Fprintf(w, "| %s | %s | %d | %d (%d) | %d | %d | %d |\n", d.name, d.sku, d.configs, d.created, d.disabled, d.withState, d.tried, d.worked)
		tc += d.configs
		tcr += d.created
		tdis += d.disabled
		tws += d.withState
		tt += d.tried
		tw += d.worked
	}
	fmt.Fprintf(w, "| **total %d devices** | | %d | %d (%d) | %d | %d | %d |\n\n", len(r.devices)-1, tc, tcr, tdis, tws, tt, tw)
	fmt.Fprintf(w, "Home Assistant log: %d warnings/errors besides the known set-up lines.\n\n", len(r.logProblems))
	for _, n := range r.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, p := range r.logProblems {
		fmt.Fprintf(w, "- LOG: %s\n", p)
	}
	for _, d := range r.devices {
		for _, f := range d.failures {
			fmt.Fprintf(w, "- FAIL %s (%s): %s\n", d.name, d.id, f)
		}
	}
	fmt.Fprintln(w)
	if o.work != "" {
		fmt.Fprintln(w, "<details><summary>service calls</summary>")
		fmt.Fprintln(w)
		for _, d := range r.devices {
			for _, cl := range d.calls {
				fmt.Fprintf(w, "- %s: %s\n", d.id, cl)
			}
		}
		fmt.Fprintln(w, "</details>")
	}
}

// run is the check proper, once the bridge published discovery and Home
// Assistant is starting.
func (c *checker) run(ctx context.Context, o options, bridgeBeforeHA bool) (*report, error) {
	rep := &report{started: time.Now()}
	c.layout = topic.New("")
	// Home Assistant's birth makes the bridge publish everything again
	_ = eventually(90*time.Second, func() error {
		if !c.bridgeConfigsSeen() && ctx.Err() == nil {
			return fmt.Errorf("no bridge configs")
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	ents, err := c.entities()
	if err != nil {
		return nil, err
	}
	// results by node: each device, then the bridge
	byNode := map[string]*devResult{}
	devOf := map[string]capability.Device{}
	for _, d := range c.sim.Devices() {
		id := topic.DeviceID(d.SKU, d.Device)
		name := strings.TrimSpace(d.Name)
		if name == "" {
			name = d.SKU
		}
		r := &devResult{id: id, name: name, sku: d.SKU}
		byNode[id] = r
		devOf[id] = d
		rep.devices = append(rep.devices, r)
	}
	bridgeRes := &devResult{id: "bridge", name: "cloud2mqtt bridge", sku: "-"}
	for _, e := range ents {
		r := byNode[e.node]
		if r == nil {
			r = bridgeRes
		}
		r.configs++
	}
	rep.devices = append(rep.devices, bridgeRes)
	if !bridgeBeforeHA {
		bridgeRes.fail("the bridge's own discovery configs were not on the broker before Home Assistant's birth message (a Home Assistant that is already running never sees the bridge device)")
	}
	nodeRes := func(e *haEntity) *devResult {
		if r := byNode[e.node]; r != nil {
			return r
		}
		return bridgeRes
	}

	// 1. every config becomes an entity
	c.logf("waiting for Home Assistant to create %d entities", len(ents))
	var reg map[string]regEntity
	err = eventually(4*time.Minute, func() error {
		if ctx.Err() != nil {
			return nil
		}
		var missing []string
		reg, _ = c.ha.registry()
		for _, e := range ents {
			if _, ok := reg[e.uid]; !ok {
				missing = append(missing, e.uid)
				continue
			}
			if e.enabled {
				if _, ok := c.haState(reg[e.uid].EntityID); !ok {
					missing = append(missing, e.id+" (no state)")
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not in Home Assistant: %v", missing)
		}
		return nil
	})
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	if err != nil {
		rep.notes = append(rep.notes, fmt.Sprintf("after 4 minutes: %v", err))
	}
	for _, e := range ents {
		r := nodeRes(e)
		re, ok := reg[e.uid]
		if !ok {
			r.fail("%s (%s): the config never became an entity", e.id, e.uid)
			continue
		}
		r.created++
		if re.EntityID != e.id {
			r.fail("%s became %s (entity id collision?)", e.id, re.EntityID)
			e.id = re.EntityID
		}
		if re.DisabledBy != nil {
			r.disabled++
			if e.enabled {
				r.fail("%s is disabled (%s) though its config enables it", e.id, *re.DisabledBy)
			}
			continue
		}
		if s, ok := c.haState(e.id); ok {
			r.withState++
			if s == "unavailable" {
				r.fail("%s is unavailable", e.id)
			}
		}
	}
	c.logf("entities: %d configs, checking states and service calls", len(ents))

	// 2. states and service calls, devices in parallel
	var wg sync.WaitGroup
	for id, r := range byNode {
		d := &devCheck{c: c, dev: devOf[id], id: id, r: r}
		var mine []*haEntity
		for _, e := range ents {
			if e.node == id {
				mine = append(mine, e)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.checkAll(mine)
		}()
	}
	for _, e := range ents {
		if nodeRes(e) == bridgeRes {
			// A button is "unknown" until pressed; no 429 has a time; a
			// quota that lasts runs out never, and whether it does is
			// unknown until a minute of requests was seen.
			s, ok := c.haState(e.id)
			mayBeUnknown := e.component == "button" || strings.HasSuffix(e.id, "last_429") ||
				strings.HasSuffix(e.id, "quota_runs_out") || strings.HasSuffix(e.id, "quota_short")
			if !ok || s == "unavailable" || (s == "unknown" && !mayBeUnknown) {
				bridgeRes.fail("%s state %q", e.id, s)
			}
		}
	}
	wg.Wait()
	var mine []*haEntity
	for _, e := range ents {
		if nodeRes(e) == bridgeRes {
			mine = append(mine, e)
		}
	}
	c.bridgeControls(mine, bridgeRes)

	// 3. one device goes offline and comes back
	if devs := c.sim.Devices(); len(devs) > 0 {
		d0 := devs[0]
		id := topic.DeviceID(d0.SKU, d0.Device)
		(&devCheck{c: c, dev: d0, id: id, r: byNode[id]}).offline(ents)
	}

	// 4. segments: enable them as a user would and restart Home Assistant
	if o.segments {
		if err := c.segments(ctx, ents, byNode, rep); err != nil {
			return rep, err
		}
	}

	rep.logProblems, err = c.ha.logProblems()
	return rep, err
}

func (c *checker) segments(ctx context.Context, ents []*haEntity, byNode map[string]*devResult, rep *report) error {
	uids := map[string]bool{}
	var segs []*haEntity
	for _, e := range ents {
		if !e.enabled {
			uids[e.uid] = true
			segs = append(segs, e)
		}
	}
	if len(segs) == 0 {
		return nil
	}
	c.logf("enabling %d disabled entities and restarting Home Assistant", len(segs))
	if err := c.ha.stop(); err != nil {
		return err
	}
	n, err := c.ha.enable(uids)
	if err != nil {
		return err
	}
	restarted := time.Now()
	if err := c.ha.restart(); err != nil {
		return err
	}
	rep.notes = append(rep.notes, fmt.Sprintf("entities disabled by default (segment lights, each device's poll interval and Read now): %d; enabled %d in the entity registry (what the UI's enable does) and restarted Home Assistant", len(segs), n))
	// after the restart every enabled entity must come back with a fresh state
	err = eventually(4*time.Minute, func() error {
		if ctx.Err() != nil {
			return nil
		}
		var missing []string
		for _, e := range ents {
			m, ok := c.st.get("hastate/" + strings.Replace(e.id, ".", "/", 1) + "/state")
			if !ok || m.at.Before(restarted) {
				missing = append(missing, e.id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("no state after the restart: %d entities, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// the automation that takes e2e/call subscribes late in the start
	time.Sleep(10 * time.Second)
	if err != nil {
		rep.notes = append(rep.notes, "after the restart: "+err.Error())
		for _, e := range ents {
			if _, ok := c.haState(e.id); !ok {
				if r := byNode[e.node]; r != nil {
					r.fail("%s: no state after the restart", e.id)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for id, r := range byNode {
		var mine []*haEntity
		for _, e := range segs {
			if e.node == id {
				mine = append(mine, e)
			}
		}
		if len(mine) == 0 {
			continue
		}
		d := &devCheck{c: c, dev: c.devByID(id), id: id, r: r}
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for _, e := range mine {
				switch e.object {
				case "read_now":
					d.readNow(e)
				case "poll_interval":
					d.pollInterval(e)
				default:
					d.segment(e, first)
					first = false
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

func (c *checker) devByID(id string) capability.Device {
	for _, d := range c.sim.Devices() {
		if topic.DeviceID(d.SKU, d.Device) == id {
			return d
		}
	}
	return capability.Device{}
}

// parseSetMap extracts the JSON literal of "{% set <name> = ... %}" from one
// of our templates: the label → cloud value table of a select-like entity.
func parseSetMap(tpl, name string) map[string]any {
	i := strings.Index(tpl, "{% set "+name+" = ")
	if i < 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(tpl[i+len("{% set "+name+" = "):]))
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	for k, v := range m {
		m[k] = capability.NormalizeValue(v)
	}
	return m
}
