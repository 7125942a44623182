package app_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/cloudsim"
	"cloud2mqtt/internal/scheduler"
)

// TestOneRefusedReadHoldsNoDeviceBack: the cloud answers one state read 401. The
// reads held back after it are no failures of the devices: each stays available,
// and the refusal names where the key came from (CLOUD_API_KEY_FILE) and the
// header it is sent in. The clock jumps until every device is read again.
func TestOneRefusedReadHoldsNoDeviceBack(t *testing.T) {
	t.Parallel()
	const header = "X-Api-Key"
	keyFile := filepath.Join(t.TempDir(), "api_key")
	if err := os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, harnessOptions{
		sim: cloudsim.Options{Catalogue: firstDevices(3), KeyHeader: header},
		env: map[string]string{"CLOUD_API_KEY": "", "CLOUD_API_KEY_FILE": keyFile, "CLOUD_API_KEY_HEADER": header},
	})
	ids := h.ids()
	availability(h.watch, wait, "online", ids...)
	h.sim.Faults().FailNext(cloud.EndpointState, 1, http.StatusUnauthorized)

	var refused time.Time
	h.jumpUntil(faultWait, time.Second, "the refused read, a hold-off after it and a read of every device since", func() bool {
		reqs := h.sim.Requests()
		if refused.IsZero() {
			for _, r := range reqs {
				if r.Endpoint == cloud.EndpointState && r.Fault == "fail" && r.HTTPStatus == http.StatusUnauthorized {
					refused = r.Time
				}
			}
			if refused.IsZero() {
				return false
			}
		}
		read := map[string]bool{}
		for _, r := range reqs {
			if r.Endpoint == cloud.EndpointState && r.HTTPStatus == http.StatusOK && r.Time.After(refused.Add(scheduler.AuthHoldoff)) {
				read[r.Device] = true
			}
		}
		return len(read) == len(ids)
	})

	for _, m := range h.watch.messages() {
		if strings.HasSuffix(m.topic, "/availability") && m.payload != "online" {
			t.Errorf("%s: %q after one refused read: the bridge's hold-off is no failure of the device", m.topic, m.payload)
		}
	}
	held := map[any]bool{}
	for _, l := range h.logLines(func(l map[string]any) bool {
		return l["component"] == "poller" && strings.Contains(fmt.Sprint(l["error"]), "not sent, the cloud refused the API key recently")
	}) {
		held[l["device"]] = true
	}
	if len(held) != len(ids) {
		t.Errorf("reads of %d devices held back after the refusal, want every device's (%d): the test did not hold reads back", len(held), len(ids))
	}
	if failed := h.logLines(func(l map[string]any) bool { return l["message"] == "state read failed" }); len(failed) != 0 {
		t.Errorf("%d reads counted failed, the first %v; want none", len(failed), failed[0])
	}
	refusals := h.logLines(func(l map[string]any) bool {
		return l["level"] == "error" && strings.Contains(fmt.Sprint(l["error"]), "401")
	})
	if len(refusals) == 0 {
		t.Fatal("the refusal is not logged as an error")
	}
	for _, l := range refusals {
		msg := fmt.Sprint(l["error"])
		for _, want := range []string{"CLOUD_API_KEY_FILE", "CLOUD_API_KEY_HEADER", header} {
			if !strings.Contains(msg, want) {
				t.Errorf("the refusal does not name %s: %s", want, msg)
			}
		}
	}
}

// noFormatArtefacts fails the test when a log line of the daemon or a
// message it published (an <id>/error, a response) carries a formatting
// artefact of fmt's (%!w(<nil>), %!s(MISSING), ...): every end-to-end test,
// the fault tests among them, checks the texts it made the daemon write.
func (h *harness) noFormatArtefacts() {
	h.t.Helper()
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "%!") {
			h.t.Errorf("a log line with a formatting artefact: %s", l)
		}
	}
	for _, m := range h.watch.messages() {
		if strings.Contains(m.payload, "%!") {
			h.t.Errorf("%s with a formatting artefact: %s", m.topic, m.payload)
		}
	}
}
