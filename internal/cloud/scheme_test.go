package cloud

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// A CLOUD_BASE_URL whose scheme does not match the server:
// https:// to a plain HTTP port, http:// to a TLS one. The error is
// permanent (never transient, so never retried), costs nothing of the
// budget (Reached is false: what answered is not the API) and names
// CLOUD_BASE_URL with the address to set, port kept.
func TestSchemeMismatch(t *testing.T) {
	list := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"code":200,"message":"success","data":[]}`))
	})
	plain := httptest.NewServer(list)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewUnstartedServer(list)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // its handshake errors are this test's subject
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	// nginx answers a plain request on its TLS port with a 400 page.
	nginx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head></html>"))
	}))
	t.Cleanup(nginx.Close)
	alert := tlsAlertServer(t)

	hostOf := func(raw string) string { u, _ := url.Parse(raw); return u.Host }
	for _, tc := range []struct {
		name, base, want string
	}{
		{"https to a plain port", "https://" + hostOf(plain.URL), "the server at CLOUD_BASE_URL answers plain HTTP, not HTTPS: tls: first record does not look like a TLS handshake; set CLOUD_BASE_URL=http://" + hostOf(plain.URL)},
		{"http to Go's TLS port", "http://" + hostOf(tlsSrv.URL), "the server at CLOUD_BASE_URL speaks only HTTPS on that port: it refused the plain HTTP request; set CLOUD_BASE_URL=https://" + hostOf(tlsSrv.URL)},
		{"http to nginx's TLS port", "http://" + hostOf(nginx.URL) + "/prefix", "set CLOUD_BASE_URL=https://" + hostOf(nginx.URL) + "/prefix"},
		{"http to a TLS alert", "http://" + alert, "the server at CLOUD_BASE_URL answers with TLS (HTTPS), not plain HTTP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: tc.base, APIKey: testKey, HTTPClient: &http.Client{Transport: tlsSrv.Client().Transport}, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListDevices(context.Background())
			if !IsSchemeMismatch(err) {
				t.Fatalf("error %v (%T) is not a scheme mismatch", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n%s\nwant it to say\n%s", err, tc.want)
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Kind == ErrTransient || IsRejected(err) {
				t.Errorf("kind %v: a scheme mismatch is neither transient nor a refusal of the request", ae.Kind)
			}
			if Reached(err) {
				t.Error("a scheme mismatch counts as a request that reached the cloud")
			}
		})
	}
}

// TestSchemeMismatchDefaultPort: a base URL without a port keeps the port
// it was reached on in the fix (https://host is 443: http://host:443).
func TestSchemeMismatchDefaultPort(t *testing.T) {
	for base, want := range map[string]string{
		"https://cloud.example":      "http://cloud.example:443",
		"http://cloud.example/api":   "https://cloud.example:80/api",
		"https://[::1]:8443":         "http://[::1]:8443",
		"https://cloud.example:8080": "http://cloud.example:8080",
	} {
		c, err := New(Config{BaseURL: base, APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.otherScheme(); got != want {
			t.Errorf("%s: fix says %s, want %s", base, got, want)
		}
	}
}

// TestMatchingSchemesAnswer: the right scheme on either server reads the
// list, and an ordinary 400 of the API is not taken for a mismatch.
func TestMatchingSchemesAnswer(t *testing.T) {
	list := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"code":200,"message":"success","data":[]}`))
	})
	for _, srv := range []*httptest.Server{httptest.NewServer(list), httptest.NewTLSServer(list)} {
		t.Cleanup(srv.Close)
		c, err := New(Config{BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client(), Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListDevices(context.Background()); err != nil {
			t.Errorf("%s: %v", srv.URL, err)
		}
	}
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"code":400,"msg":"Parameter error: plain http request"}`))
	})
	if _, err := c.ListDevices(context.Background()); IsSchemeMismatch(err) {
		t.Errorf("the API's own 400 is taken for a scheme mismatch: %v", err)
	}
}

// tlsAlertServer answers every connection with a TLS alert, as TLS
// servers other than Go's answer a plain HTTP request, and returns its
// address.
func tlsAlertServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 512)
			_, _ = conn.Read(buf)
			_, _ = conn.Write([]byte("\x15\x03\x01\x00\x02\x02\x46")) // alert: protocol version
			_ = conn.Close()
		}
	}()
	return ln.Addr().String()
}
