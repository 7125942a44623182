package broker

// Who may connect and publish. Only the owner, the bridge, publishes under
// Owner.Reserved (wills included, Owner.Open excepted) or takes its client
// id, because a retained false state from any other client would stand in
// Home Assistant; the owner is known by the login made at each start
// (Broker.OwnerLogin), since any client can claim a client id.

import (
	"cloud2mqtt/internal/topic"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Owner is the client the embedded broker reserves topics to: the bridge.
type Owner struct {
	// ClientID is the owner's client id, which no other client may
	// connect with: it would take the owner's session over.
	ClientID string
	// Reserved are the filters of the topics only the owner may publish
	// to, a will included: the bridge's base ("cloud2mqtt/#").
	Reserved []string
	// Open are the filters within Reserved that every client may publish
	// to: the commands and requests (topic.Layout.Inbound).
	Open []string
}

// OwnerUsername is the user name of the owner's login (Broker.OwnerLogin).
const OwnerUsername = "cloud2mqtt-bridge"

// login is a user name and a password made for one start.
type login struct{ user, password string }

func newLogin() login {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return login{OwnerUsername, hex.EncodeToString(b)}
}

// OwnerLogin is the user name and password that make a client the owner
// (Options.Owner); "" without an owner. The password is made at Start and
// never leaves the process but through this method.
func (b *Broker) OwnerLogin() (username, password string) {
	if b.acl.owner == nil {
		return "", ""
	}
	return b.acl.login.user, b.acl.login.password
}

// aclHook is the broker's one hook: authentication and the ACL.
type aclHook struct {
	mochi.HookBase
	users map[string]string
	owner *Owner
	login login
	log   zerolog.Logger

	// Refusals are logged at most once a second (the rest counted):
	// whoever is refused can try again as fast as it likes.
	mu       sync.Mutex
	logLimit *rate.Limiter
	unlogged int
}

func newACLHook(users map[string]string, owner *Owner, log zerolog.Logger) *aclHook {
	h := &aclHook{users: users, owner: owner, log: log, logLimit: rate.NewLimiter(1, 1)}
	if owner != nil {
		h.login = newLogin()
	}
	return h
}

func (h *aclHook) ID() string { return "cloud2mqtt-acl" }

func (h *aclHook) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

// OnConnectAuthenticate lets the owner in with its login only; then it
// refuses any other client that claims the owner's client id or has a will
// on a reserved topic; then it lets the users in (or anyone when there are
// none). A refused MQTT 3 client is answered "not authorized" (mochi maps
// the refusal so). The owner's connection is exempt from the packet-size
// limit (guard.go).
func (h *aclHook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	user := string(pk.Connect.Username)
	if h.owner != nil && user == h.login.user {
		ok := subtle.ConstantTimeCompare([]byte(h.login.password), pk.Connect.Password) == 1
		if g, isGuard := cl.Net.Conn.(*guard); isGuard && ok {
			g.trust()
		}
		return ok
	}
	if h.owner != nil {
		switch {
		case h.owner.ClientID != "" && pk.Connect.ClientIdentifier == h.owner.ClientID:
			h.refused(cl, "connection", "a client claiming the bridge's client id", "")
			return false
		case pk.Connect.WillFlag && h.reserved(pk.Connect.WillTopic):
			h.refused(cl, "connection", "a client with a will on a topic only the bridge publishes to", pk.Connect.WillTopic)
			return false
		}
	}
	if len(h.users) == 0 {
		return true
	}
	want, ok := h.users[user]
	return ok && subtle.ConstantTimeCompare([]byte(want), pk.Connect.Password) == 1
}

// OnACLCheck lets every client subscribe, and publish anywhere but on the
// reserved topics outside the open ones, which only the owner publishes
// to. A refused QoS 0 publish is dropped; a refused QoS 1 or 2 publish
// disconnects an MQTT 3 client and is answered "not authorized" to an
// MQTT 5 one (mochi).
func (h *aclHook) OnACLCheck(cl *mochi.Client, t string, write bool) bool {
	if !write || h.owner == nil || string(cl.Properties.Username) == h.login.user || !h.reserved(t) {
		return true
	}
	h.refused(cl, "publish", "a publish to a topic only the bridge publishes to", t)
	return false
}

// reserved reports whether only the owner may publish to t.
func (h *aclHook) reserved(t string) bool {
	return matchesAny(h.owner.Reserved, t) && !matchesAny(h.owner.Open, t)
}

// refused logs a refusal, at most once a second.
func (h *aclHook) refused(cl *mochi.Client, what, why, t string) {
	h.mu.Lock()
	ok := h.logLimit.AllowN(time.Now(), 1)
	unlogged := h.unlogged
	if ok {
		h.unlogged = 0
	} else {
		h.unlogged++
	}
	h.mu.Unlock()
	if !ok {
		return
	}
	e := h.log.Warn().Str("client_id", clip(cl.ID)).Str("remote", cl.Net.Remote).Str("topic", clip(t)).Str("refused", what)
	if unlogged > 0 {
		e = e.Int("unlogged_before", unlogged)
	}
	e.Msg("embedded broker refused " + why + " (only the bridge's own login may)")
}

// clip shortens what a client chose before it is logged.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

func matchesAny(filters []string, t string) bool {
	for _, f := range filters {
		if topic.Matches(f, t) {
			return true
		}
	}
	return false
}
