package broker

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// pipeConn is a net.Conn reading from a byte slice in chunks of a given
// size.
type pipeConn struct {
	net.Conn
	r     *bytes.Reader
	chunk int
}

func (p *pipeConn) Read(b []byte) (int, error) {
	if len(b) > p.chunk {
		b = b[:p.chunk]
	}
	return p.r.Read(b)
}
func (p *pipeConn) Close() error                    { return nil }
func (p *pipeConn) SetReadDeadline(time.Time) error { return nil }
func (p *pipeConn) RemoteAddr() net.Addr            { return nil }

// packet is an MQTT packet with the given type byte and body.
func packet(typ byte, body []byte) []byte {
	out := []byte{typ}
	n := len(body)
	for {
		b := byte(n % 128)
		n /= 128
		if n > 0 {
			b |= 0x80
		}
		out = append(out, b)
		if n == 0 {
			break
		}
	}
	return append(out, body...)
}

// connectBody is a CONNECT's body (MQTT 3.1.1) for a client id.
func connectBody(id string) []byte {
	b := []byte{0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 30, byte(len(id) >> 8), byte(len(id))}
	return append(b, id...)
}

// FuzzGuard: whatever bytes a client sends, in whatever chunks, the guard
// passes them on unchanged up to the first packet over the limit (unless
// the connection is the owner's, trusted) and never panics; a stream of
// packets under the limit passes whole.
func FuzzGuard(f *testing.F) {
	ok := append(packet(0x10, connectBody("c1")), packet(0x30, append([]byte{0, 1, 't'}, bytes.Repeat([]byte("x"), 90)...))...)
	f.Add(ok, uint8(1), false)
	f.Add(ok, uint8(7), false)
	f.Add(append(packet(0x10, connectBody("bridge")), packet(0x30, bytes.Repeat([]byte("y"), 300))...), uint8(64), true)
	f.Add(append(packet(0x10, connectBody("bridge")), packet(0x30, bytes.Repeat([]byte("y"), 300))...), uint8(64), false)
	f.Add(append(packet(0x10, connectBody("x")), 0x30, 0xff, 0xff, 0xff, 0xff), uint8(3), true)
	f.Add([]byte{0x10, 0x80}, uint8(1), true)
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, owner bool) {
		const limit = 200
		refused := 0
		g := &guard{Conn: &pipeConn{r: bytes.NewReader(stream), chunk: int(chunk%64) + 1},
			g: &guarded{max: limit, onRefuse: func(string, int) { refused++ }}}
		if owner {
			g.trust()
		}
		got, err := io.ReadAll(g)
		if err != nil && !errors.Is(err, errTooLarge) {
			t.Fatalf("error %v", err)
		}
		if !bytes.HasPrefix(stream, got) {
			t.Fatalf("the guard changed the bytes")
		}
		if err == nil && len(got) != len(stream) {
			t.Fatalf("passed %d of %d bytes without an error", len(got), len(stream))
		}
		// Every packet whose header the guard let through in full is
		// within the limit unless the client is exempt.
		if errors.Is(err, errTooLarge) && owner && refused > 0 {
			t.Fatalf("the owner's packet was refused")
		}
		if err == nil && !owner {
			for rest := got; len(rest) > 1; {
				size, done, bad := remaining(rest[:min(len(rest), 5)])
				if bad || !done {
					break
				}
				if size > limit {
					t.Fatalf("a packet of %d bytes passed", size)
				}
				hl := 2
				for i := 1; i < 5 && rest[i]&0x80 != 0; i++ {
					hl++
				}
				if len(rest) < hl+size {
					break
				}
				rest = rest[hl+size:]
			}
		}
	})
}
