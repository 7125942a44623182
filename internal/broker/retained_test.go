package broker

import (
	"testing"
	"time"
)

// A store waits for the scans under way, at most the time it is given; a
// scan waits for the store under way.
func TestIndexLock(t *testing.T) {
	var l indexLock
	l.scan()
	l.scan()
	start := time.Now()
	if l.store(20 * time.Millisecond) {
		t.Fatal("a store went ahead of two scans under way")
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Errorf("the store gave up after %s, want 20ms", waited)
	}
	if l.store(0) {
		t.Fatal("a store that only tries went ahead of the scans")
	}
	got := make(chan bool)
	go func() { got <- l.store(time.Minute) }()
	l.scanned()
	l.scanned()
	if !<-got {
		t.Fatal("a store waiting for the scans did not go ahead when they ended")
	}
	scanning := make(chan struct{})
	go func() {
		l.scan()
		close(scanning)
	}()
	for waiting := false; !waiting; {
		l.mu.Lock()
		scans := l.scans
		waiting = l.changed != nil
		l.mu.Unlock()
		if scans != 0 {
			t.Fatal("a scan went ahead of the store under way")
		}
		time.Sleep(time.Millisecond) // polling until the scan waits, bounded by the test's timeout
	}
	l.stored()
	<-scanning
	l.scanned()
	if !l.store(0) {
		t.Fatal("a store found the index busy with nothing under way")
	}
	l.stored()
}
