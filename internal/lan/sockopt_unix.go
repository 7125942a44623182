//go:build unix

package lan

import "syscall"

// allowBroadcast lets the socket send to a broadcast address a user lists
// in LAN_SCAN_TARGETS (e.g. 192.168.20.255).
func allowBroadcast(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
	})
	if err != nil {
		return err
	}
	return serr
}
