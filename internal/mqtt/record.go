package mqtt

// The bridge's record of its broker connection, kept in the state
// directory (mqtt.json): the client id it made up once, and the last
// instant it knew it was connected with nothing older waiting at the
// broker (backlog.go).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"cloud2mqtt/internal/statedir"
)

const (
	recordFile    = "mqtt.json"
	recordFormat  = "cloud2mqtt-mqtt"
	recordVersion = 1
)

// recordData is mqtt.json's content.
type recordData struct {
	ClientID string `json:"client_id"`
	// Seen is the last instant the client id SeenID was known connected
	// with nothing older waiting at the broker.
	SeenID string    `json:"seen_id,omitempty"`
	Seen   time.Time `json:"seen,omitzero"`
}

// Record is the bridge's record of its connection: the client id it made
// up, and when it was last connected (Config.Record). Only the Client
// writes it once connected. Its methods are safe for concurrent use.
type Record struct {
	dir  statedir.Dir
	kept bool // the id outlives this process
	log  zerolog.Logger

	mu     sync.Mutex
	data   recordData
	failed bool // the last write failed (said once)
}

// OpenRecord reads the record kept in dir, or makes one up and writes it
// at once: a client id of 48 random bits, which no other client can derive
// (from the host, the base topic or anything else it may know) and which
// a copy of the bridge with a state directory of its own never shares.
// Without a state directory (dir ""), or when the record cannot be
// written, the id is this run's only, and Close asks the broker to forget
// its session. Problems are logged as warnings; the Record is usable
// whatever happened.
func OpenRecord(dir statedir.Dir, log zerolog.Logger) *Record {
	r := &Record{dir: dir, log: log}
	if dir == "" {
		r.data.ClientID = newClientID()
		return r
	}
	err := dir.Read(recordFile, recordFormat, recordVersion, &r.data)
	switch {
	case err == nil && validClientID(r.data.ClientID):
		r.kept = true
		return r
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		log.Warn().Err(err).Msg("the MQTT record cannot be read: the bridge connects with a new client id, and the broker's session of the old one is left to expire")
	}
	r.data = recordData{ClientID: newClientID()}
	if err := dir.Write(recordFile, recordFormat, recordVersion, r.data); err != nil {
		log.Warn().Err(err).Msg("the MQTT client id cannot be kept in STATE_DIR: this run's id is new and lasts until it stops")
		return r
	}
	r.kept = true
	return r
}

// newClientID is "cloud2mqtt-" and 12 random hex digits: 23 characters,
// the length every MQTT 3.1.1 broker must accept. 48 bits are out of reach
// of guessing: each guess is a connection, and a wrong one says nothing.
func newClientID() string {
	var b [6]byte
	rand.Read(b[:]) // crypto/rand: never fails
	return "cloud2mqtt-" + hex.EncodeToString(b[:])
}

// validClientID holds a read id to what newClientID makes and
// Config.Validate admits: a damaged file is not a connection's id.
func validClientID(id string) bool {
	return id != "" && len(id) <= 256 && !strings.ContainsAny(id, "+#/") && strings.IndexFunc(id, unicode.IsControl) < 0
}

// ClientID is configured (MQTT_CLIENT_ID) when set, else the record's id.
func (r *Record) ClientID(configured string) string {
	if configured != "" {
		return configured
	}
	return r.data.ClientID // set once, by OpenRecord
}

// ephemeral reports whether id is the record's own and not kept: nothing
// will connect with it again once this run ends.
func (r *Record) ephemeral(id string) bool { return !r.kept && id == r.data.ClientID }

// seen is the last instant id was known connected with nothing older
// waiting; zero when unknown (another id's instant says nothing of it).
func (r *Record) seen(id string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.data.SeenID != id {
		return time.Time{}
	}
	return r.data.Seen
}

// save keeps at as id's instant, in the state directory when there is one.
// A failed write is logged once, until one succeeds again.
func (r *Record) save(id string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.data.SeenID == id && r.data.Seen.Equal(at) {
		return
	}
	r.data.SeenID, r.data.Seen = id, at
	if r.dir == "" {
		return
	}
	err := r.dir.Write(recordFile, recordFormat, recordVersion, r.data)
	switch {
	case err != nil && !r.failed:
		r.log.Warn().Err(err).Msg("the MQTT record cannot be written: after a restart, what the broker kept for the bridge meanwhile is dropped (its time offline is unknown)")
	case err == nil && r.failed:
		r.log.Info().Msg("the MQTT record is written again")
	}
	r.failed = err != nil
}
