package capability

import "testing"

// TestDisplayName: the user's own name, else the cloud's, else the model;
// blank names are none and surrounding spaces go.
func TestDisplayName(t *testing.T) {
	tests := []struct {
		name, cloud, own, want string
	}{
		{"the cloud's name", "Hall light", "", "Hall light"},
		{"the user's own name wins", "Hall light", "Landing", "Landing"},
		{"spaces around are dropped", "  Hall light ", " Landing\t", "Landing"},
		{"the cloud's name trimmed", "  Hall light ", "", "Hall light"},
		{"a blank own name is none", "Hall light", "   ", "Hall light"},
		{"no name: the model", "  ", "", "H6008"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Device{SKU: "H6008", Device: "AA:BB", Name: tt.cloud}
			if got := DisplayName(d, tt.own); got != tt.want {
				t.Errorf("DisplayName(%q, %q) = %q, want %q", tt.cloud, tt.own, got, tt.want)
			}
		})
	}
}
