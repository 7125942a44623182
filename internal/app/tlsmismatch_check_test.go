package app

import (
	"net/http/httptest"
	"strings"
	"testing"

	"cloud2mqtt/internal/cloudsim"
)

// TestCheckCloudSchemeMismatch: -check with https:// to the simulated cloud's
// plain HTTP port FAILs with the address to set, not as a failure that may pass
// on its own.
func TestCheckCloudSchemeMismatch(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	ok, out := checkReport(t, map[string]string{
		"CLOUD_BASE_URL": strings.Replace(srv.URL, "http://", "https://", 1),
		"CLOUD_API_KEY":  sim.APIKey(),
	})
	if ok {
		t.Fatalf("-check passed:\n%s", out)
	}
	want := "FAIL cloud: devices: the server at CLOUD_BASE_URL answers plain HTTP, not HTTPS"
	if !strings.Contains(out, want) || !strings.Contains(out, "; set CLOUD_BASE_URL="+srv.URL+"\n") {
		t.Errorf("report lacks %q and the fix:\n%s", want, out)
	}
}
