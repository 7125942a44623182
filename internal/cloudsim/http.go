package cloudsim

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"cloud2mqtt/internal/capability"
	"cloud2mqtt/internal/cloud"
)

// Messages of the answers. The 400 messages are the spec's categories
// (capability.Category); the 404 messages are the live service's.
const (
	msgUnauthorized   = "unauthorized, please check your API key"
	msgSuccess        = "success"
	msgNoDevice       = "devices not exist"
	msgNotYours       = "devices not belong you"
	msgNoInstance     = "devices not support this instance"
	msgOffline        = "device offline"
	msgTooMany        = "Too Many Requests"
	maxBodyBytes      = 1 << 20
	contentTypeJSON   = "application/json"
	nonJSONFaultBody  = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"
	statusNotAnswered = 0
)

// answer is a response being built.
type answer struct {
	status int // HTTP status before ErrorsAs200
	code   int // code in the body
	msg    string
	body   []byte
	header http.Header
	bucket string
	// what the request named, for the log
	sku, device, instance string
}

func (a *answer) setHeader(k, v string) {
	if a.header == nil {
		a.header = http.Header{}
	}
	a.header.Set(k, v)
}

func endpointOf(path string) string {
	switch path {
	case cloud.PathDevices:
		return cloud.EndpointDevices
	case cloud.PathState:
		return cloud.EndpointState
	case cloud.PathScenes:
		return cloud.EndpointScenes
	case cloud.PathDIYScenes:
		return cloud.EndpointDIYScenes
	case cloud.PathControl:
		return cloud.EndpointControl
	}
	return AnyEndpoint
}

// ServeHTTP answers one request like the live service.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep := endpointOf(r.URL.Path)
	// Read the body first: only then does net/http notice a client that
	// hangs up, which a hung or slow request must see.
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	act := s.faults.next(ep)
	if act.latency > 0 && !sleepCtx(r.Context(), act.latency) {
		s.logFault(r, ep, "latency")
		return
	}
	if act.hang != nil && !s.hang(r.Context(), act.hang) {
		s.logFault(r, ep, "hang")
		return
	}
	switch act.kind {
	case faultReset:
		s.logFault(r, ep, "reset")
		resetConnection(w)
		return
	case faultFail:
		a := &answer{status: act.status, code: act.status, msg: http.StatusText(act.status)}
		a.body = mustJSON(map[string]any{"code": act.status, "msg": a.msg})
		s.finish(w, r, ep, a, "fail")
		return
	}

	a := s.handle(r, ep, body, readErr)
	fault := ""
	if act.kind == faultMalform {
		fault = "malformed"
		switch act.malform {
		case MalformedNonJSON:
			a.body = []byte(nonJSONFaultBody)
			a.setHeader("Content-Type", "text/html; charset=utf-8")
		default:
			a.body = a.body[:len(a.body)/2]
		}
	}
	s.finish(w, r, ep, a, fault)
}

// hang blocks until release or the end of ctx; false means ctx ended.
func (s *Sim) hang(ctx context.Context, release <-chan struct{}) bool {
	s.faults.hung.Add(1)
	defer s.faults.hung.Add(-1)
	select {
	case <-release:
		return true
	case <-ctx.Done():
		return false
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// resetConnection drops the connection without an answer: a TCP reset when
// the connection can be hijacked, else an aborted response.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if ok {
		conn, _, err := hj.Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Sim) logFault(r *http.Request, ep, fault string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(Request{Time: s.now(), Endpoint: ep, Method: r.Method, Path: r.URL.Path,
		HTTPStatus: statusNotAnswered, Code: statusNotAnswered, Fault: fault})
}

// finish writes the answer and logs it.
func (s *Sim) finish(w http.ResponseWriter, r *http.Request, ep string, a *answer, fault string) {
	status := a.status
	if s.errorsAs200 && (a.code == http.StatusBadRequest || a.code == http.StatusNotFound) {
		status = http.StatusOK
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	for k, v := range a.header {
		h[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write(a.body)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(Request{Time: s.now(), Endpoint: ep, Method: r.Method, Path: r.URL.Path,
		SKU: a.sku, Device: a.device, Instance: a.instance,
		HTTPStatus: status, Code: a.code, Msg: a.msg, Bucket: a.bucket, Fault: fault})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values built here are marshalled; they always encode.
		return []byte(`{"code":500,"msg":"cloudsim: encode answer"}`)
	}
	return b
}

// handle is the service proper: auth, the quota, request checks, limits,
// the device.
func (s *Sim) handle(r *http.Request, ep string, body []byte, readErr error) *answer {
	if ep == AnyEndpoint {
		return getError(http.StatusNotFound, "not found")
	}
	if !s.authorised(r) {
		return getError(http.StatusUnauthorized, msgUnauthorized)
	}
	hdr, refused := s.spend(s.now())
	if refused != nil {
		return refused
	}
	a := s.handleAuthorised(r, ep, body, readErr)
	for k, v := range hdr {
		if a.header == nil {
			a.header = http.Header{}
		}
		a.header[k] = v
	}
	return a
}

// handleAuthorised answers a request with the account's key that the quota
// let through.
func (s *Sim) handleAuthorised(r *http.Request, ep string, body []byte, readErr error) *answer {
	if ep == cloud.EndpointDevices {
		if r.Method != http.MethodGet {
			return getError(http.StatusMethodNotAllowed, "method not allowed")
		}
		return s.listDevices()
	}
	if r.Method != http.MethodPost {
		return getError(http.StatusMethodNotAllowed, "method not allowed")
	}
	if readErr != nil {
		return postError("", http.StatusBadRequest, string(capability.CategoryFormat))
	}
	req, fail := parseRequest(body, ep == cloud.EndpointControl)
	if fail != nil {
		return fail
	}
	switch ep {
	case cloud.EndpointState:
		return s.queryState(req)
	case cloud.EndpointScenes, cloud.EndpointDIYScenes:
		return s.queryScenes(req, ep)
	default:
		return s.control(req)
	}
}

func (s *Sim) authorised(r *http.Request) bool {
	got := r.Header.Get(s.keyHeader)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked || got == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) == 1
}

// getError is the error shape of the device list (and of 401): "message".
func getError(code int, msg string) *answer {
	return &answer{status: code, code: code, msg: msg,
		body: mustJSON(struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{code, msg})}
}

// postAnswer is the shape of every POST answer.
type postAnswer struct {
	RequestID  string       `json:"requestId"`
	Msg        string       `json:"msg"`
	Code       int          `json:"code"`
	Payload    any          `json:"payload,omitempty"`
	Capability *controlEcho `json:"capability,omitempty"`
}

type controlEcho struct {
	Type     string         `json:"type"`
	Instance string         `json:"instance"`
	Value    any            `json:"value"`
	State    map[string]any `json:"state"`
}

func postError(requestID string, code int, msg string) *answer {
	return &answer{status: code, code: code, msg: msg,
		body: mustJSON(postAnswer{RequestID: requestID, Msg: msg, Code: code})}
}

func (s *Sim) tooMany(requestID, bucket string, wait time.Duration) *answer {
	a := &answer{status: http.StatusTooManyRequests, code: http.StatusTooManyRequests, msg: msgTooMany, bucket: bucket}
	if !s.emptyBody {
		a.body = mustJSON(map[string]any{"code": http.StatusTooManyRequests, "msg": msgTooMany})
	}
	a.setHeader("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
	return a
}

func (s *Sim) listDevices() *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bucket, wait := take(s.now(), namedLimiter{BucketDevices, s.buckets.devices}); bucket != "" {
		return s.tooMany("", bucket, wait)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"code":200,"message":"success","data":[`)
	first := true
	for _, id := range s.order {
		if s.removed[id] {
			continue
		}
		sd := s.devices[id]
		raw := sd.raw
		if raw == nil {
			raw = mustJSON(sd.dev)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.Write(raw)
	}
	buf.WriteString("]}")
	return &answer{status: http.StatusOK, code: http.StatusOK, msg: "success", body: buf.Bytes()}
}

// request is a decoded POST body.
type request struct {
	requestID, sku, device string
	capType, instance      string
	value                  any
}

// parseRequest decodes a POST body and answers the spec's 400s for what is
// missing (absent or null), empty, of the wrong JSON type or not JSON.
func parseRequest(body []byte, control bool) (request, *answer) {
	var req request
	top, fail := decodeObject(body)
	if fail != "" {
		return req, postError("", http.StatusBadRequest, string(fail))
	}
	bad := func(cat capability.Category) *answer {
		return postError(req.requestID, http.StatusBadRequest, string(cat))
	}
	var cat capability.Category
	if req.requestID, cat = stringMember(top, "requestId"); cat != "" {
		return req, bad(cat)
	}
	payload, cat := objectMember(top, "payload")
	if cat != "" {
		return req, bad(cat)
	}
	if req.sku, cat = stringMember(payload, "sku"); cat != "" {
		return req, bad(cat)
	}
	if req.device, cat = stringMember(payload, "device"); cat != "" {
		return req, bad(cat)
	}
	if !control {
		return req, nil
	}
	capObj, cat := objectMember(payload, "capability")
	if cat != "" {
		return req, bad(cat)
	}
	if req.capType, cat = stringMember(capObj, "type"); cat != "" {
		return req, bad(cat)
	}
	if req.instance, cat = stringMember(capObj, "instance"); cat != "" {
		return req, bad(cat)
	}
	raw, ok := capObj["value"]
	if !ok {
		return req, bad(capability.CategoryMissing)
	}
	v, err := capability.Normalize(raw)
	if err != nil {
		return req, bad(capability.CategoryFormat)
	}
	req.value = v
	return req, nil
}

// decodeObject decodes a JSON object into its raw members; fail is the
// category when it cannot.
func decodeObject(b []byte) (map[string]json.RawMessage, capability.Category) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, capability.CategoryMissing
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, capability.CategoryType
		}
		return nil, capability.CategoryFormat
	}
	if dec.More() {
		return nil, capability.CategoryFormat
	}
	if m == nil {
		return nil, capability.CategoryMissing // the body was null
	}
	return m, ""
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func stringMember(m map[string]json.RawMessage, key string) (string, capability.Category) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return "", capability.CategoryMissing
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", capability.CategoryType
	}
	if s == "" {
		return "", capability.CategoryEmpty
	}
	return s, ""
}

func objectMember(m map[string]json.RawMessage, key string) (map[string]json.RawMessage, capability.Category) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil, capability.CategoryMissing
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, capability.CategoryType
	}
	return obj, ""
}

// device finds the requested device; s.mu must be held.
func (s *Sim) device(req request) (*simDevice, *answer) {
	sd, ok := s.devices[req.device]
	switch {
	case !ok || sd.dev.SKU != req.sku:
		return nil, postError(req.requestID, http.StatusNotFound, msgNoDevice)
	case s.removed[req.device]:
		return nil, postError(req.requestID, http.StatusNotFound, msgNotYours)
	}
	return sd, nil
}

func (s *Sim) queryState(req request) *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	a := s.limitedDevice(req, now, BucketState)
	if a == nil {
		var sd *simDevice
		if sd, a = s.device(req); sd != nil && s.stateless[req.device] {
			a = postError(req.requestID, http.StatusBadRequest, msgNoDevice)
		} else if sd != nil {
			a = &answer{status: http.StatusOK, code: http.StatusOK, msg: msgSuccess,
				body: mustJSON(postAnswer{RequestID: req.requestID, Msg: msgSuccess, Code: http.StatusOK, Payload: s.stateAt(sd, now)})}
		}
	}
	a.sku, a.device = req.sku, req.device
	return a
}

// limitedDevice passes a request through a per-device bucket; s.mu must be
// held. It returns the 429 answer, or nil.
func (s *Sim) limitedDevice(req request, now time.Time, bucket string) *answer {
	if b, wait := take(now, namedLimiter{bucket, s.buckets.device(bucket, req.device)}); b != "" {
		return s.tooMany(req.requestID, b, wait)
	}
	return nil
}

// scenePayload is the payload of a scene answer: one capability whose
// options are the scenes (none when the device has no such capability).
type scenePayload struct {
	SKU          string                  `json:"sku"`
	Device       string                  `json:"device"`
	Capabilities []capability.Capability `json:"capabilities"`
}

func (s *Sim) queryScenes(req request, ep string) *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	bucket := BucketScenes
	if ep == cloud.EndpointDIYScenes {
		bucket = BucketDIYScenes
	}
	a := s.limitedDevice(req, s.now(), bucket)
	if a == nil {
		var sd *simDevice
		if sd, a = s.device(req); sd != nil {
			p := scenePayload{SKU: sd.dev.SKU, Device: sd.dev.Device, Capabilities: []capability.Capability{}}
			typ, instance, opts := capability.TypeDynamicScene, capability.InstanceLightScene, s.sceneOptions(sd)
			_, has := sd.dev.Capability(capability.InstanceLightScene)
			if ep == cloud.EndpointDIYScenes {
				typ, instance, opts = capability.TypeDIYColorSetting, capability.InstanceDIYScene, s.diySceneOptions(sd)
				_, has = sd.dev.Capability(capability.InstanceDIYScene)
			}
			if has || len(opts) > 0 {
				if opts == nil {
					opts = []capability.Option{}
				}
				p.Capabilities = append(p.Capabilities, capability.Capability{Type: typ, Instance: instance,
					Parameters: &capability.Parameters{DataType: capability.DataEnum, Options: opts}})
			}
			a = &answer{status: http.StatusOK, code: http.StatusOK, msg: msgSuccess,
				body: mustJSON(postAnswer{RequestID: req.requestID, Msg: msgSuccess, Code: http.StatusOK, Payload: p})}
		}
	}
	a.sku, a.device = req.sku, req.device
	return a
}

// control applies a control command, checking in the cloud's order: rate
// limits, device, instance, value, online, then the new state.
func (s *Sim) control(req request) *answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	a := s.controlLocked(req, now)
	a.sku, a.device, a.instance = req.sku, req.device, req.instance
	return a
}

func (s *Sim) controlLocked(req request, now time.Time) *answer {
	if b, wait := take(now,
		namedLimiter{BucketControlAccount, s.buckets.control},
		namedLimiter{BucketControlDevice, s.buckets.device(BucketControlDevice, req.device)},
	); b != "" {
		return s.tooMany(req.requestID, b, wait)
	}
	sd, fail := s.device(req)
	if fail != nil {
		return fail
	}
	echo := &controlEcho{Type: req.capType, Instance: req.instance, Value: req.value}
	logged := func(a *answer) *answer {
		s.controls = appendBounded(s.controls, ControlRecord{Time: now, SKU: req.sku, Device: req.device,
			Type: req.capType, Instance: req.instance, Value: clone(req.value), Code: a.code, Msg: a.msg}, s.logLimit)
		return a
	}
	failed := func(code int, msg, detail string) *answer {
		echo.State = map[string]any{"status": "failure", "errorCode": code, "errorMsg": detail}
		return logged(&answer{status: code, code: code, msg: msg,
			body: mustJSON(postAnswer{RequestID: req.requestID, Msg: msg, Code: code, Capability: echo})})
	}
	c, ok := sd.capability(req.capType, req.instance)
	if !ok {
		return logged(postError(req.requestID, http.StatusNotFound, msgNoInstance))
	}
	if err := capability.Validate(s.effective(sd, c), req.value); err != nil {
		var ve *capability.ValueError
		if !errors.As(err, &ve) {
			return failed(http.StatusBadRequest, string(capability.CategoryFormat), err.Error())
		}
		if ve.Code() == http.StatusNotFound {
			return logged(postError(req.requestID, http.StatusNotFound, msgNoInstance))
		}
		return failed(ve.Code(), string(ve.Category), ve.Error())
	}
	if !sd.online {
		return failed(http.StatusBadRequest, msgOffline, "the device is offline")
	}
	v := capability.WithDefaults(c, req.value)
	merged := merge(sd.values[c.Instance], v)
	if capability.Validate(s.effective(sd, c), merged) != nil {
		merged = clone(v) // members of the old value no longer fit (a new work mode)
	}
	sd.values[c.Instance] = merged
	sd.zeroAfter(c.Instance)
	echo.State = map[string]any{"status": "success"}
	return logged(&answer{status: http.StatusOK, code: http.StatusOK, msg: msgSuccess,
		body: mustJSON(postAnswer{RequestID: req.requestID, Msg: msgSuccess, Code: http.StatusOK, Capability: echo})})
}
