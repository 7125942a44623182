package lan_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud2mqtt/internal/clock/clocktest"
	"cloud2mqtt/internal/lan"
	"cloud2mqtt/internal/lansim"
)

// Work in hand keeps a test from jumping a read's timeout while its answer
// is on its way or being handled.

// newWorkNet is the lamp and a client that found it, on one frozen clock
// that both report their work to; the scan's work is done.
func newWorkNet(t *testing.T) (*clocktest.Clock, *lansim.Sim, *lan.Client) {
	t.Helper()
	clk := clocktest.NewFrozen(time.Unix(1_800_000_000, 0))
	sim, err := lansim.New(lansim.Options{Clock: clk},
		lansim.Spec{ID: lamp, SKU: "H6076", Addr: lampAddr, State: lan.Status{On: true, Brightness: 50, HasBrightness: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	found := make(chan lan.Device, 8)
	c, err := lan.New(lan.Config{Listen: "127.0.0.1:0", Targets: []lan.Target{{Host: lampAddr.String(), Port: sim.ScanPort()}},
		CommandPort: sim.CommandPort(), Clock: clk, OnDevice: func(d lan.Device) { found <- d }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetKnown([]string{lamp})
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-found:
	case <-time.After(10 * time.Second):
		t.Fatal("the lamp did not answer the scan")
	}
	clk.IdleWithin(t, 10*time.Second, "after the scan's answer")
	return clk, sim, c
}

// next waits for a value on ch.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestStatusIsWorkInHandUntilAnswered: a status read keeps the clock busy
// while its request is at the device and while its answer is handled, and
// leaves it idle once answered.
func TestStatusIsWorkInHandUntilAnswered(t *testing.T) {
	clk, sim, c := newWorkNet(t)
	atDevice, atClient := make(chan struct{}), make(chan struct{})
	resume, quit := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(quit) }) // before the client and the device close
	hold := func(at chan struct{}) {
		at <- struct{}{}
		select {
		case <-resume:
		case <-quit:
		}
	}
	sim.OnReceive(func(_ string, r lansim.Received) {
		if r.Request.Cmd == lan.CmdStatus {
			hold(atDevice)
		}
	})
	lan.SetOnStatus(c, func(string, lan.Status) { hold(atClient) })

	res := make(chan error, 1)
	go func() {
		_, err := c.Status(context.Background(), lamp)
		res <- err
	}()
	next(t, atDevice, "the request at the lamp")
	if clk.Idle() {
		t.Error("idle while the lamp holds the status request")
	}
	resume <- struct{}{}
	next(t, atClient, "the answer at the client")
	if clk.Idle() {
		t.Error("idle while the client handles the status answer")
	}
	resume <- struct{}{}
	if err := next(t, res, "the status read"); err != nil {
		t.Fatal(err)
	}
	clk.IdleWithin(t, 10*time.Second, "after the answer")
}

// TestPollIsWorkInHandUntilRead: a poll round is work in hand until its read
// returns, except while it waits on the clock for a silent lamp.
func TestPollIsWorkInHandUntilRead(t *testing.T) {
	clk, sim, c := newWorkNet(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	read, resume := make(chan error, 1), make(chan struct{}, 1)
	go func() {
		defer close(done)
		c.RunPolls(ctx, time.Second, func(ctx context.Context, id string) {
			_, err := c.Status(ctx, id)
			read <- err
			select {
			case <-resume:
			case <-ctx.Done():
			}
		})
	}()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.WaitPending(wctx, 1); err != nil {
		t.Fatalf("the poll's timer: %v", err)
	}
	clk.Advance(time.Second)
	if err := next(t, read, "the poll's status read"); err != nil {
		t.Fatal(err)
	}
	if clk.Idle() {
		t.Error("idle while the poll's read is still handing its answer on")
	}
	resume <- struct{}{}
	clk.IdleWithin(t, 10*time.Second, "after the poll's read")

	// The lamp off: the next round's read waits on its timeouts alone.
	if err := sim.SetOff(lamp, true); err != nil {
		t.Fatal(err)
	}
	resume <- struct{}{}
	clk.Advance(time.Second)
	for try := 1; try <= 3; try++ { // Config.Tries
		if err := clk.WaitPending(wctx, 1); err != nil { // the try's timeout (the round's timer waits for the read)
			t.Fatalf("try %d: %v", try, err)
		}
		clk.IdleWithin(t, 10*time.Second, fmt.Sprintf("try %d of a read of the lamp switched off", try))
		clk.Advance(300 * time.Millisecond) // Config.ConfirmTimeout
	}
	if err := next(t, read, "the poll's read of the lamp switched off"); !errors.Is(err, lan.ErrNoAnswer) {
		t.Fatalf("poll of the lamp switched off: %v, want ErrNoAnswer", err)
	}
	clk.IdleWithin(t, 10*time.Second, "after the poll gave up")
}

// TestDatagramToNobodyIsNoWork: a datagram to an address nobody listens at
// is no work in hand, so its timeouts can be jumped.
func TestDatagramToNobodyIsNoWork(t *testing.T) {
	clk, sim, c := newWorkNet(t)
	lone, err := lan.New(lan.Config{Listen: "127.0.0.1:0", Targets: []lan.Target{{Host: spareAddr.String(), Port: sim.ScanPort()}}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	if err := lone.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !clk.Idle() {
		t.Errorf("a scan of an address nobody listens at is work in hand: %v", clk.Holders())
	}

	if err := sim.Move(lamp, moveAddr); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := c.Status(context.Background(), lamp)
		res <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for try := 1; try <= 3; try++ { // Config.Tries
		if err := clk.WaitPending(ctx, 1); err != nil { // the try's timeout: its request is out
			t.Fatalf("try %d: %v", try, err)
		}
		clk.IdleWithin(t, 10*time.Second, fmt.Sprintf("try %d, its request to the lamp's old address", try))
		select {
		case err := <-res:
			t.Fatalf("the read ended before its timeouts were jumped: %v", err)
		default:
		}
		clk.Advance(300 * time.Millisecond) // Config.ConfirmTimeout
	}
	if err := next(t, res, "the status read"); !errors.Is(err, lan.ErrNoAnswer) {
		t.Fatalf("status of a lamp that moved away: %v, want ErrNoAnswer", err)
	}
	clk.IdleWithin(t, 10*time.Second, "after the read gave up")
}
