//go:build !unix

package lan

import "syscall"

// allowBroadcast does nothing here: broadcast targets need a Unix.
func allowBroadcast(_, _ string, _ syscall.RawConn) error { return nil }
