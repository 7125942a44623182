package cloudsim

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

//go:embed demo/devices.json demo/scenes.json
var demoFiles embed.FS

// Catalogue is the set of devices a simulated account holds, with the scene
// lists the scene endpoints answer for them.
type Catalogue struct {
	// Devices in list order. Raw keeps each device's JSON exactly as loaded so
	// the device-list endpoint answers what the file said, including fields and
	// spellings the model does not know.
	Devices []CatalogueDevice

	// Scenes and DIYScenes map a device id to the options the scene and
	// DIY-scene endpoints answer. A light without an entry gets DefaultScenes,
	// or a generated list when that is nil too; DIY scenes fall back to the
	// diyScene options of the device list.
	Scenes    map[string][]capability.Option
	DIYScenes map[string][]capability.Option

	// DefaultScenes, when set, is the dynamic-scene list of every device that
	// has a lightScene capability and no entry in Scenes.
	DefaultScenes []capability.Option

	// Stateless are the ids of devices whose state reads answer 400
	// "devices not exist" while their commands are accepted, as the live
	// service answers for the groups made in its app. A device with one of
	// GroupSKUs is stateless without being named here; false here makes
	// one an ordinary device. See AddGroups.
	Stateless map[string]bool
}

// CatalogueDevice is one device of a catalogue: its decoded definition and the
// JSON it came from.
type CatalogueDevice struct {
	capability.Device
	Raw json.RawMessage
}

// LoadCatalogue reads a catalogue file in the device-list format (the body of
// GET /router/api/v1/user/devices, or a bare array of devices).
func LoadCatalogue(path string) (*Catalogue, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cloudsim: read catalogue: %w", err)
	}
	c, err := ParseCatalogue(b)
	if err != nil {
		return nil, fmt.Errorf("cloudsim: catalogue %s: %w", path, err)
	}
	return c, nil
}

// ParseCatalogue decodes a catalogue in the device-list format: an object with
// a "data" array of devices, or a bare array. Every device needs a device id
// and an sku; ids must be unique. Unknown device and capability types are
// kept as they are.
func ParseCatalogue(b []byte) (*Catalogue, error) {
	raws, err := deviceArray(b)
	if err != nil {
		return nil, err
	}
	c := &Catalogue{Scenes: map[string][]capability.Option{}, DIYScenes: map[string][]capability.Option{}}
	seen := map[string]bool{}
	for i, raw := range raws {
		var d capability.Device
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("cloudsim: device %d: %w", i, err)
		}
		if d.Device == "" || d.SKU == "" {
			return nil, fmt.Errorf("cloudsim: device %d has no %q or %q: every device needs both", i, "device", "sku")
		}
		if seen[d.Device] {
			return nil, fmt.Errorf("cloudsim: device id %s appears twice: ids must be unique", d.Device)
		}
		seen[d.Device] = true
		c.Devices = append(c.Devices, CatalogueDevice{Device: d, Raw: compact(raw)})
	}
	return c, nil
}

func deviceArray(b []byte) ([]json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("cloudsim: empty catalogue: want a device list")
	}
	var raws []json.RawMessage
	if b[0] == '[' {
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, fmt.Errorf("cloudsim: decode device array: %w", err)
		}
		return raws, nil
	}
	var list struct {
		Data *[]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("cloudsim: decode device list: %w", err)
	}
	if list.Data == nil {
		return nil, errors.New(`cloudsim: device list has no "data" array: want the body of the device-list endpoint`)
	}
	return *list.Data, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return buf.Bytes()
}

// ParseSceneList decodes the body of a scene or DIY-scene answer (or a bare
// option array) into its options, for Catalogue.DefaultScenes or Scenes.
func ParseSceneList(b []byte) ([]capability.Option, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var opts []capability.Option
		if err := json.Unmarshal(b, &opts); err != nil {
			return nil, fmt.Errorf("cloudsim: decode scene options: %w", err)
		}
		return opts, nil
	}
	var answer struct {
		Payload cloud.Scenes `json:"payload"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return nil, fmt.Errorf("cloudsim: decode scene answer: %w", err)
	}
	if len(answer.Payload.Capabilities) == 0 {
		return nil, errors.New("cloudsim: scene answer has no payload.capabilities: want the body of the scenes endpoint")
	}
	return answer.Payload.Options(), nil
}

// DemoCatalogue is the built-in account of demo mode: one device of every
// device type of the spec plus a fan, covering every capability family
// (segments, colour, scenes, music, work modes, temperatures, sockets,
// properties, events). Each call returns a fresh copy.
func DemoCatalogue() *Catalogue {
	c, err := demoCatalogue()
	if err != nil {
		// The demo files are part of the program and a test parses them;
		// failing here means the build itself is broken.
		panic(err)
	}
	return c
}

func demoCatalogue() (*Catalogue, error) {
	devs, err := demoFiles.ReadFile("demo/devices.json")
	if err != nil {
		return nil, fmt.Errorf("cloudsim: demo devices: %w", err)
	}
	c, err := ParseCatalogue(devs)
	if err != nil {
		return nil, fmt.Errorf("cloudsim: demo devices: %w", err)
	}
	sc, err := demoFiles.ReadFile("demo/scenes.json")
	if err != nil {
		return nil, fmt.Errorf("cloudsim: demo scenes: %w", err)
	}
	var scenes map[string]struct {
		LightScene []capability.Option `json:"lightScene"`
		DIYScene   []capability.Option `json:"diyScene"`
	}
	if err := json.Unmarshal(sc, &scenes); err != nil {
		return nil, fmt.Errorf("cloudsim: demo scenes: %w", err)
	}
	for id, s := range scenes {
		c.Scenes[id] = s.LightScene
		c.DIYScenes[id] = s.DIYScene
	}
	return c, nil
}

// generatedScenes is the dynamic-scene list of a light that the catalogue
// gives none: a handful of scenes whose ids derive from the device id, so a
// device always gets the same list.
func generatedScenes(deviceID string) []capability.Option {
	names := []string{"Sunrise", "Sunset", "Aurora", "Forest", "Ocean", "Candlelight", "Rainbow", "Starry Sky"}
	h := fnv.New32a()
	h.Write([]byte(deviceID))
	base := int64(h.Sum32()%9000) + 1000
	out := make([]capability.Option, len(names))
	for i, n := range names {
		out[i] = capability.Option{Name: n, Value: map[string]any{
			"paramId": base*2 + int64(i)*13,
			"id":      base + int64(i),
		}}
	}
	return out
}

// generatedDIYScenes is the DIY list of a light whose definition lists none.
func generatedDIYScenes(deviceID string) []capability.Option {
	h := fnv.New32a()
	h.Write([]byte(deviceID))
	base := int64(h.Sum32()%1000000) + 8000000
	return []capability.Option{{Name: "My Fade", Value: base}, {Name: "My Party", Value: base + 1}}
}
