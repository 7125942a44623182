package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type data struct {
	Count int    `json:"count"`
	Name  string `json:"name"`
}

func TestWriteThenRead(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "state")) // created on the first write
	if err := d.Write("x.json", "test/x", 1, data{3, "a"}); err != nil {
		t.Fatal(err)
	}
	var got data
	if err := d.Read("x.json", "test/x", 1, &got); err != nil || got != (data{3, "a"}) {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	fi, err := os.Stat(filepath.Join(string(d), "x.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600 (the bridge's user only)", fi.Mode().Perm())
	}
	// A second write replaces the first and leaves no temporary file.
	if err := d.Write("x.json", "test/x", 1, data{4, "b"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(string(d))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after two writes, want the file alone", len(entries))
	}
}

func TestBadFilesAreReportedNotUsed(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keep := data{7, "kept"}
	for name, tc := range map[string]struct{ content, says string }{
		"truncated":     {`{"format":"test/x","version":1,"data":{"count":`, "not a state file"},
		"not JSON":      {"\x00\x01garbage", "not a state file"},
		"other format":  {`{"format":"someone/else","version":1,"data":{}}`, `not "test/x"`},
		"older version": {`{"format":"test/x","version":0,"data":{}}`, "version 0"},
		"damaged data":  {`{"format":"test/x","version":1,"data":{"count":"many"}}`, "damaged"},
	} {
		t.Run(name, func(t *testing.T) {
			write(tc.content)
			got := keep
			err := d.Read("x.json", "test/x", 1, &got)
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "ignored") {
				t.Errorf("Read error %v, want one saying %q and that the file is ignored", err, tc.says)
			}
			if name != "damaged data" && got != keep {
				t.Errorf("a bad file changed the value: %+v", got)
			}
		})
	}
	if err := d.Read("missing.json", "test/x", 1, &keep); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestNoStateDirectory(t *testing.T) {
	var d Dir
	if err := d.Write("x.json", "f", 1, 1); !errors.Is(err, ErrOff) {
		t.Errorf("Write = %v", err)
	}
	var v int
	if err := d.Read("x.json", "f", 1, &v); !errors.Is(err, ErrOff) {
		t.Errorf("Read = %v", err)
	}
}

func TestUnwritableDirectoryNamesTheFix(t *testing.T) {
	// A file where the directory should be stops root too.
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Dir(filepath.Join(blocker, "state")).Write("x.json", "f", 1, 1)
	if err == nil || !strings.Contains(err.Error(), "STATE_DIR") {
		t.Errorf("Write under a file: %v, want an error naming STATE_DIR", err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	if err := Dir(filepath.Join(dir, "new")).Check(); err != nil {
		t.Errorf("a directory that can be created: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "new")); len(entries) != 0 {
		t.Errorf("Check left %d files behind", len(entries))
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := Dir(filepath.Join(blocker, "state")).Check()
	if err == nil || !strings.Contains(err.Error(), "STATE_DIR") || !strings.Contains(err.Error(), "StateDirectory=") {
		t.Errorf("an impossible directory: %v, want the variable and the fix named", err)
	}
	if err := Dir("").Check(); !errors.Is(err, ErrOff) {
		t.Errorf("no directory: %v", err)
	}
}
