package capability

import "testing"

func TestDecodeSegments(t *testing.T) {
	seg := fixtureCapability(t, "H6072", InstanceSegmentedColorRGB)     // size 1..8, elements 0..14
	segWide := fixtureCapability(t, "H6052", InstanceSegmentBrightness) // size 1..15
	segOpts := fixtureCapability(t, "H6601", InstanceSegmentedColorRGB) // option list 0..14
	runDecodeCases(t, []decodeCase{
		{"list", seg, `{"segment":[0,1],"rgb":"#ff0000"}`, `{"segment":[0,1],"rgb":16711680}`, "", ""},
		{"single index", seg, `{"segment":3,"rgb":255}`, `{"segment":[3],"rgb":255}`, "", ""},
		{"range string", seg, `{"segment":"0-4,7","rgb":"255,0,0"}`, `{"segment":[0,1,2,3,4,7],"rgb":16711680}`, "", ""},
		{"numeric strings in list", seg, `{"segment":["1","2"],"rgb":1}`, `{"segment":[1,2],"rgb":1}`, "", ""},
		{"all on a wide strip", segWide, `{"segment":"all","brightness":"50"}`, `{"segment":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],"brightness":50}`, "", ""},
		{"all from options", segOpts, `{"segment":"ALL","rgb":1}`, `{"segment":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14],"rgb":1}`, "", ""},
		{"all exceeds size", seg, `{"segment":"all","rgb":1}`, ``, CategoryLength, "allowed are 1 to 8"},
		{"reversed range", seg, `{"segment":"4-0","rgb":1}`, ``, CategoryFormat, "lower index first"},
		{"garbage", seg, `{"segment":"a,b","rgb":1}`, ``, CategoryFormat, "0-4,7"},
		{"huge range", seg, `{"segment":"0-99999999999","rgb":1}`, ``, CategoryLength, "more than 1024"},
		{"duplicate", seg, `{"segment":"1,1","rgb":1}`, ``, CategoryDuplicate, "1 appears more than once"},
		{"out of range", seg, `{"segment":"14-15","rgb":1}`, ``, CategoryRange, "above the maximum 14"},
		{"empty string", seg, `{"segment":"","rgb":1}`, ``, CategoryEmpty, ""},
		{"missing colour", seg, `{"segment":[1]}`, ``, CategoryMissing, "rgb"},
		{"scalar for a segment struct", seg, `5`, ``, CategoryType, "members segment, rgb"},
	})
}
