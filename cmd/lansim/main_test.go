package main

import (
	"bufio"
	"context"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/lan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The printed LAN_SCAN_TARGETS find the lights.
func TestRunServesLightsAClientFinds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-first", "127.0.0.12", "-scan-port", "0", "-command-port", "0", "-reply-port", "0",
			"-devices", "AA:01=H6008,AA:02=H6076"}, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	lines := bufio.NewScanner(pr)
	var targetsLine, noteLine string
	for lines.Scan() {
		l := lines.Text()
		if strings.Contains(l, "LAN_SCAN_TARGETS=") {
			targetsLine = l
		}
		if strings.HasPrefix(l, "note:") {
			noteLine = l
			break
		}
	}
	go io.Copy(io.Discard, pr)
	_, list, _ := strings.Cut(targetsLine, "LAN_SCAN_TARGETS=")
	targets, err := lan.ParseTargets(list)
	if err != nil || len(targets) != 2 || targets[0].Host != "127.0.0.12" || targets[1].Host != "127.0.0.13" {
		t.Fatalf("printed %q: %v, %v", targetsLine, targets, err)
	}
	if noteLine == "" {
		t.Fatal("no note about the command port")
	}

	found := make(chan lan.Device, 4)
	c, err := lan.New(lan.Config{Listen: "127.0.0.1:0", Targets: targets, OnDevice: func(d lan.Device) { found <- d }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetKnown([]string{"AA:01", "AA:02"})
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case d := <-found:
			if !d.Addr.IsLoopback() || d.Addr.Compare(netip.MustParseAddr("127.0.0.12")) < 0 {
				t.Errorf("found %+v", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the printed targets found nothing")
		}
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-first", "192.168.1.2"}, {"-devices", "AA"}, {"extra"}} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}
