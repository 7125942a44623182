// Package statedir keeps JSON files in the bridge's state directory
// (STATE_DIR) across restarts. Files are written atomically, readable by
// the bridge's user only, and wrapped in an envelope naming their format
// and version, so a file from another program or version is recognised.
// It never holds a secret.
package statedir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Dir is a state directory. The zero value is "no state directory": Write
// and Read do nothing and report ErrOff.
type Dir string

// ErrOff is returned by Dir's methods when no state directory is set.
var ErrOff = errors.New("statedir: no state directory (STATE_DIR is empty)")

// ErrNewer is wrapped by Read's error for a file a newer version of the
// bridge wrote: it is renamed aside (the error names where), never read
// and never overwritten, so that going back to the newer version finds it.
var ErrNewer = errors.New("statedir: written by a newer version of the bridge")

// envelope is the outside of every file.
type envelope struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Saved   time.Time       `json:"saved"`
	Data    json.RawMessage `json:"data"` // last: WriteRaw puts it in place of null
}

// Write stores v as JSON in the file name of the directory, atomically:
// a reader sees the old file or the new one, never a part, even after a
// crash or a power cut. The file is readable by the bridge's user only.
func (d Dir) Write(name, format string, version int, v any) error {
	if d == "" {
		return ErrOff
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("statedir: encode %s: %w", name, err)
	}
	return d.WriteRaw(name, format, version, data)
}

// WriteRaw is Write of data already encoded as JSON (the caller vouches
// for it: it is not checked), put in the envelope as it is.
func (d Dir) WriteRaw(name, format string, version int, data []byte) error {
	return d.WriteTo(name, format, version, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteTo is Write with write encoding JSON straight into the file, so a
// large file is never whole in memory.
func (d Dir) WriteTo(name, format string, version int, write func(w io.Writer) error) error {
	if d == "" {
		return ErrOff
	}
	head, err := json.Marshal(envelope{Format: format, Version: version, Saved: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return fmt.Errorf("statedir: encode %s: %w", name, err)
	}
	// The envelope with the data in place of its null.
	head = bytes.TrimSuffix(head, []byte("null}"))
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("statedir: create STATE_DIR %s: %w", d, err)
	}
	if v, ok := d.versionOf(name, format); ok && v > version {
		return fmt.Errorf("%w: %s is version %d of %s and this bridge writes version %d; it is not replaced: move it away, or run the newer bridge", ErrNewer, d.path(name), v, format, version)
	}
	tmp, err := os.CreateTemp(string(d), "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("statedir: write %s: %w (is STATE_DIR writable by this user?)", d.path(name), err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("statedir: write %s: %w", d.path(name), err)
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	_, err = bw.Write(head)
	if err == nil {
		err = write(bw)
	}
	if err == nil {
		err = bw.WriteByte('}')
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("statedir: write %s: %w", d.path(name), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("statedir: write %s: %w", d.path(name), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("statedir: write %s: %w", d.path(name), err)
	}
	if err := os.Rename(tmp.Name(), d.path(name)); err != nil {
		return fmt.Errorf("statedir: write %s: %w", d.path(name), err)
	}
	// The rename is durable once the directory is.
	if dir, err := os.Open(string(d)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// versionOf is the version of the file name when it is a state file of
// format. It reads only the envelope's first members (Write puts them
// first), not the data: a large account's devices file is megabytes.
func (d Dir) versionOf(name, format string) (int, bool) {
	f, err := os.Open(d.path(name))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 4096))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, false
	}
	var gotFormat string
	version, haveVersion := 0, false
	for range 2 {
		key, err := dec.Token()
		if err != nil {
			return 0, false
		}
		switch key {
		case "format":
			if dec.Decode(&gotFormat) != nil {
				return 0, false
			}
		case "version":
			if dec.Decode(&version) != nil {
				return 0, false
			}
			haveVersion = true
		default:
			return 0, false
		}
	}
	return version, haveVersion && gotFormat == format
}

// Read decodes the file name into v. A missing file wraps fs.ErrNotExist;
// a file of another format or version is an error saying so, which callers
// log as a warning and go on without the file.
func (d Dir) Read(name, format string, version int, v any) error {
	if d == "" {
		return ErrOff
	}
	b, err := os.ReadFile(d.path(name))
	if err != nil {
		return fmt.Errorf("statedir: read %s: %w", d.path(name), err)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("statedir: %s is not a state file (%v); it is ignored and replaced", d.path(name), err)
	}
	if env.Format != format {
		return fmt.Errorf("statedir: %s holds %q, not %q; it is ignored and replaced", d.path(name), env.Format, format)
	}
	if env.Version > version {
		return d.keepAside(name, format, env.Version, version)
	}
	if env.Version != version {
		return fmt.Errorf("statedir: %s is version %d of %s, this bridge reads version %d; it is ignored and replaced", d.path(name), env.Version, format, version)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("statedir: %s is damaged (%v); it is ignored and replaced", d.path(name), err)
	}
	return nil
}

func (d Dir) path(name string) string { return filepath.Join(string(d), name) }

// keepAside renames a file of a newer version out of the way, to
// <name>.v<version>.bak (or, when that is taken, with the time added), and
// returns the error saying so. If it cannot be renamed, the error says the
// file is left alone; Write then refuses to replace it.
func (d Dir) keepAside(name, format string, got, want int) error {
	aside := fmt.Sprintf("%s.v%d.bak", d.path(name), got)
	if _, err := os.Lstat(aside); err == nil {
		aside = fmt.Sprintf("%s.v%d.%d.bak", d.path(name), got, time.Now().Unix())
	}
	if err := os.Rename(d.path(name), aside); err != nil {
		return fmt.Errorf("%w: %s is version %d of %s, this bridge reads version %d, and it cannot be moved aside (%v); it is left as it is and not replaced: move it away, or run the newer bridge", ErrNewer, d.path(name), got, format, want, err)
	}
	return fmt.Errorf("%w: %s is version %d of %s, this bridge reads version %d; it was kept as %s and this bridge starts without it (run the newer bridge again to use it)", ErrNewer, d.path(name), got, format, want, aside)
}

// Check reports whether the directory exists (or can be created) and the
// bridge's user can write in it, with the fix when not.
func (d Dir) Check() error {
	if d == "" {
		return ErrOff
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("statedir: STATE_DIR=%s cannot be created (%v): create it and give it to the bridge's user, or under systemd use StateDirectory=", d, err)
	}
	f, err := os.CreateTemp(string(d), ".check.*.tmp")
	if err != nil {
		return fmt.Errorf("statedir: STATE_DIR=%s is not writable by this user (%v): chown it to the bridge's user, or under systemd use StateDirectory=", d, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
