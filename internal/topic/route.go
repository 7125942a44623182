package topic

// The inbound direction: the filters the bridge subscribes to and the
// parsing of a topic that arrived on one of them into a Route.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what an inbound topic asks for.
type Kind int

// Kinds of inbound topics.
const (
	KindSet         Kind = iota + 1 // <id>/set: a JSON object of instance → value
	KindSetInstance                 // <id>/set/<instance>: a plain value
	KindGet                         // <id>/get: a confirming read now
	KindLightSet                    // <id>/light/set: Home Assistant light (JSON schema) command
	KindSegmentSet                  // <id>/segment/<n>/set: one segment's light command
	KindRequest                     // bridge/request/<action>
)

// Route is an inbound topic taken apart.
type Route struct {
	ID       string // the device reference (a topic id, or sku/device joined by "/" only in payloads); "bridge" for requests
	Kind     Kind
	Instance string // KindSetInstance
	Segment  int    // KindSegmentSet
	Action   string // KindRequest: the action, one or more levels ("device/options")
}

// ErrNotInbound is returned by Route for a topic that is not one the bridge
// takes commands on: outside the base, or one of its own outbound topics.
var ErrNotInbound = errors.New("topic: not a command or request topic of the bridge")

// RouteError is a topic that looks like a device command but cannot be one,
// such as one with extra levels. ID is the device whose error topic answers.
type RouteError struct {
	ID    string
	Topic string
	Msg   string
}

func (e *RouteError) Error() string {
	return "topic " + strconv.Quote(e.Topic) + ": " + e.Msg
}

// Inbound lists the topic filters the bridge subscribes to. They end in #
// so a command with extra levels is answered with an error rather than
// ignored; none matches a topic the bridge publishes.
func (l Layout) Inbound() []string {
	return []string{
		l.Base + "/+/set/#", // set, set/<instance>, and anything deeper
		l.Base + "/+/get/#",
		l.Base + "/+/light/set/#",
		l.Base + "/+/segment/+/set/#",
		l.BridgeRequestFilter(),
	}
}

// Route parses an inbound topic. It returns ErrNotInbound for a topic the
// bridge takes no commands on and a *RouteError for a malformed one.
func (l Layout) Route(t string) (Route, error) {
	r, ok := strings.CutPrefix(t, l.Base+"/")
	if !ok {
		return Route{}, ErrNotInbound
	}
	id, rest, _ := strings.Cut(r, "/")
	if id == "" {
		return Route{}, ErrNotInbound
	}
	if id == "bridge" {
		action, ok := strings.CutPrefix(rest, "request/")
		if !ok { // an empty action is answered as an unknown one
			return Route{}, ErrNotInbound
		}
		return Route{ID: id, Kind: KindRequest, Action: action}, nil
	}
	bad := func(format string, args ...any) (Route, error) {
		return Route{ID: id}, &RouteError{ID: id, Topic: t, Msg: fmt.Sprintf(format, args...)}
	}
	head, tail, deeper := strings.Cut(rest, "/")
	switch head {
	case "set":
		if !deeper {
			return Route{ID: id, Kind: KindSet}, nil
		}
		inst, extra, more := strings.Cut(tail, "/")
		switch {
		case inst == "":
			return bad("no instance after set/: send a plain value to %s or a JSON object to %s", l.SetInstance(id, "<instance>"), l.Set(id))
		case more:
			return bad("extra levels %q after set/%s: send the value to %s", extra, inst, l.SetInstance(id, inst))
		}
		return Route{ID: id, Kind: KindSetInstance, Instance: inst}, nil
	case "get":
		if deeper {
			return bad("extra levels %q after get: ask for a read on %s", tail, l.Get(id))
		}
		return Route{ID: id, Kind: KindGet}, nil
	case "light":
		switch {
		case tail == "set":
			return Route{ID: id, Kind: KindLightSet}, nil
		case strings.HasPrefix(tail, "set/"):
			return bad("extra levels %q after light/set: send the command to %s", tail[len("set/"):], l.LightSet(id))
		}
	case "segment":
		n, after, _ := strings.Cut(tail, "/")
		if after != "set" && !strings.HasPrefix(after, "set/") {
			break
		}
		seg, err := strconv.Atoi(n)
		if err != nil || seg < 0 || n != strconv.Itoa(seg) {
			return bad("the segment %q must be a number, as in %s", n, l.SegmentSet(id, 0))
		}
		if after != "set" {
			return bad("extra levels %q after segment/%d/set: send the command to %s", after[len("set/"):], seg, l.SegmentSet(id, seg))
		}
		return Route{ID: id, Kind: KindSegmentSet, Segment: seg}, nil
	}
	return Route{}, ErrNotInbound
}
