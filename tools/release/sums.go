package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// sums writes SHA256SUMS in sha256sum's format (sha256sum -c SHA256SUMS
// checks it), one line per artifact in name order.
func (r *release) sums() error {
	names := append([]string(nil), r.files...)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(r.out, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + n + "\n")
	}
	return os.WriteFile(filepath.Join(r.out, "SHA256SUMS"), []byte(b.String()), 0o644)
}
