package capability

// dynamic_scene: an ENUM whose options the scene endpoints fill; until
// then any integer or {paramId,id} object may be a scene. A device shows
// at most one scene, and a colour or a white ends it.

import "slices"

// unlistedOption checks a value for an ENUM that lists no options yet.
func (ck valueChecker) unlistedOption(field string, v any) *ValueError {
	if _, res := asWholeInt(v); res == intOK || isSceneObject(v) {
		return nil
	}
	return ck.fail(CategoryType, field, "expected an option value (an integer or a {paramId,id} object), got %s %s", valueKind(v), showValue(v))
}

// isSceneObject reports whether v is a dynamic scene value {paramId, id}.
func isSceneObject(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 {
		return false
	}
	_, r1 := asWholeInt(m["paramId"])
	_, r2 := asWholeInt(m["id"])
	return r1 == intOK && r2 == intOK
}

// Effects says what setting instance does to the device's other values:
// drop lists values that stop being true (a colour ends the scene) and zero
// those the cloud then reports as 0 (the colour temperature while a colour
// shows). The registry applies them to optimistic values.
func Effects(d Device, instance string) (drop, zero []string) {
	scenes := []string{InstanceLightScene, InstanceDIYScene, InstanceSnapshot}
	switch instance {
	case InstanceColorRGB, InstanceColorTemperatureK:
		if _, hasCT := d.Capability(InstanceColorTemperatureK); hasCT && instance == InstanceColorRGB {
			zero = []string{InstanceColorTemperatureK}
		}
		return scenes, zero
	case InstanceLightScene, InstanceDIYScene, InstanceSnapshot:
		return slices.DeleteFunc(scenes, func(s string) bool { return s == instance }), nil
	}
	return nil, nil
}
