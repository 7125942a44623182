package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewerVersionKeptAside: a file a newer bridge wrote is never read and
// never overwritten: Read moves it aside (saying where), and the next Write
// then writes a fresh file beside the kept one.
func TestNewerVersionKeptAside(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	newer := `{"format":"test/x","version":3,"saved":"2026-11-25T00:00:00Z","data":{"count":9,"name":"from v3"}}`
	path := filepath.Join(dir, "x.json")
	if err := os.WriteFile(path, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	// Write refuses to replace it before anything read it.
	if err := d.Write("x.json", "test/x", 1, data{1, "v1"}); !KeptAside(err) || !strings.Contains(err.Error(), "not replaced") {
		t.Fatalf("Write over a newer file: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(path); string(b) != newer {
		t.Fatalf("the newer file was changed: %s", b)
	}

	var got data
	err := d.Read("x.json", "test/x", 1, &got)
	aside := path + ".v3.bak"
	if !KeptAside(err) || !strings.Contains(err.Error(), aside) {
		t.Fatalf("Read of a newer file: %v, want it kept as %s", err, aside)
	}
	if got != (data{}) {
		t.Errorf("a newer file was read: %+v", got)
	}
	if b, err := os.ReadFile(aside); err != nil || string(b) != newer {
		t.Fatalf("kept file: %q, %v; want the newer file unchanged", b, err)
	}
	if err := d.Write("x.json", "test/x", 1, data{2, "v1"}); err != nil {
		t.Fatalf("Write after the file was kept aside: %v", err)
	}
	if err := d.Read("x.json", "test/x", 1, &got); err != nil || got != (data{2, "v1"}) {
		t.Errorf("Read = %+v, %v", got, err)
	}

	// A second newer file does not replace the first one kept.
	if err := os.WriteFile(path, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	err = d.Read("x.json", "test/x", 1, &got)
	if !KeptAside(err) || strings.Contains(err.Error(), aside+" ") {
		t.Fatalf("second newer file: %v, want it kept under another name", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files, want the two kept files (the current one was moved)", len(entries))
	}
}

// FuzzRead: whatever a state file holds, Read neither panics nor loses a
// file of a newer version: such a file is moved aside intact, and anything
// else is left where it was.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"format":"test/x","version":1,"data":{"count":1,"name":"a"}}`))
	f.Add([]byte(`{"format":"test/x","version":9,"data":{}}`))
	f.Add([]byte(`{"version":2,"format":"test/x","data":{}}`))
	f.Add([]byte(`{"format":"test/x","version":1e3,"data":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		d := Dir(dir)
		path := filepath.Join(dir, "x.json")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		var got data
		err := d.Read("x.json", "test/x", 1, &got)
		if KeptAside(err) {
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || entries[0].Name() == "x.json" {
				t.Fatalf("newer file not moved aside: %v", entries)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, entries[0].Name())); string(b) != string(content) {
				t.Fatalf("the file kept aside changed")
			}
			return
		}
		if b, _ := os.ReadFile(path); string(b) != string(content) {
			t.Fatalf("Read changed the file (error %v)", err)
		}
		// Write replaces it unless it is of a newer version.
		if err := d.Write("x.json", "test/x", 1, data{1, "w"}); err != nil && !KeptAside(err) {
			t.Fatalf("Write: %v", err)
		}
	})
}

// KeptAside reports whether err is Read's error for a file of a newer
// version.
func KeptAside(err error) bool { return errors.Is(err, ErrNewer) }
