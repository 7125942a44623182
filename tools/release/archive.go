package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is one file or directory of a tar stream.
type entry struct {
	name     string // slash-separated, relative; a directory ends in /
	mode     int64
	uid, gid int
	data     []byte
}

// writeTar writes entries in name order with every header fixed: the
// given time, numeric owners without names, no access or change times.
func writeTar(w io.Writer, entries []entry, mtime time.Time) error {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	tw := tar.NewWriter(w)
	for _, e := range sorted {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			// USTAR: no PAX records with access or change times.
			Format: tar.FormatUSTAR,
		}
		if e.uid == 0 && e.gid == 0 {
			h.Uname, h.Gname = "root", "root"
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// gzipBytes compresses b with a header that carries no name or time.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archive writes cloud2mqtt_VERSION_linux_NAME.tar.gz: one directory of
// that name (without .tar.gz) holding the binary and what a user needs to
// install it by hand.
func (r *release) archive(t target, bin string) error {
	base := fmt.Sprintf("cloud2mqtt_%s_linux_%s", r.version, t.name)
	binary, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	entries, err := archiveEntries(base, binary, r.readRepo)
	if err != nil {
		return err
	}
	var tarball bytes.Buffer
	if err := writeTar(&tarball, entries, r.epoch); err != nil {
		return err
	}
	gz, err := gzipBytes(tarball.Bytes())
	if err != nil {
		return err
	}
	return r.writeOut(base+".tar.gz", gz)
}

// archiveFiles are the repository's files an archive carries, with their
// modes. config.example.env is 0600 like the .deb's env file: it becomes
// /etc/cloud2mqtt/cloud2mqtt.env, where the API key may be written, and a
// copy (cp, tar -x) keeps the mode.
var archiveFiles = []struct {
	path string
	mode int64
}{
	{"LICENSE", 0o644},
	{"README.md", 0o644},
	{"CHANGELOG.md", 0o644},
	{"config.example.env", 0o600},
	{"deploy/systemd/cloud2mqtt.service", 0o644},
}

// archiveEntries are an archive's directory base/, the binary and
// archiveFiles, read by readRepo.
func archiveEntries(base string, binary []byte, readRepo func(string) ([]byte, error)) ([]entry, error) {
	entries := []entry{{name: base + "/", mode: 0o755}, {name: base + "/cloud2mqtt", mode: 0o755, data: binary}}
	for _, f := range archiveFiles {
		b, err := readRepo(f.path)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{name: base + "/" + path.Base(f.path), mode: f.mode, data: b})
	}
	return entries, nil
}

// writeOut writes an artifact into the output directory.
func (r *release) writeOut(name string, b []byte) error {
	if err := os.WriteFile(filepath.Join(r.out, name), b, 0o644); err != nil {
		return err
	}
	r.add(name)
	return nil
}
