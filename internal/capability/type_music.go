package capability

// music_setting: a struct of a music mode, its sensitivity and colour. A
// scalar sent for it is the mode; a missing sensitivity is full and a
// missing required rgb white with automatic colour.

import "maps"

// maxSensitivity bounds a sensitivity whatever a definition says (spec,
// "Limits" rule 3).
const maxSensitivity = 100

var musicRules = typeRules{
	instances: []string{InstanceMusicMode},
	scalar:    memberScalar(InstanceMusicMode),
	complete:  musicDefaults,
}

// musicDefaults fills what a person rarely sends with a music mode: full
// sensitivity, and white with automatic colour when rgb is required.
func musicDefaults(fields []Field, m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+3)
	maps.Copy(out, m)
	has := func(name string) bool { e, ok := out[name]; return ok && e != nil }
	filledRGB := false
	for _, f := range fields {
		if has(f.FieldName) || f.DefaultValue != nil {
			continue
		}
		switch {
		case f.FieldName == "sensitivity" && f.DataType == DataInteger:
			top := int64(maxSensitivity)
			if f.Range != nil {
				top = int64(f.Range.Max)
			}
			out[f.FieldName] = top
		case f.FieldName == "rgb" && f.Required && f.DataType == DataInteger:
			out[f.FieldName] = int64(maxColor)
			filledRGB = true
		}
	}
	if filledRGB && !has("autoColor") {
		if f, ok := (&Parameters{Fields: fields}).Field("autoColor"); ok && onOffOptions(f.Options) {
			out["autoColor"] = int64(1)
		}
	}
	return out
}
