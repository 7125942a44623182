package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"cloud2mqtt/internal/mqtttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fixtures = "../../testdata"

// serve starts run on a free port and returns its base URL and a stop
// function that returns run's error.
func serve(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	var out strings.Builder
	url := ""
	re := regexp.MustCompile(`at (https?://127\.0\.0\.1:\d+)`)
	for url == "" && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no URL printed; output %q, run: %v", out.String(), <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return url, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return after cancel")
			return nil
		}
	}
}

func get(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/router/api/v1/user/devices", nil)
	req.Header.Set("Service-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestRunServesDemo(t *testing.T) {
	url, stop := serve(t, "-key", "k1")
	if got := get(t, url, "k1"); got != 200 {
		t.Fatalf("list with key: %d", got)
	}
	if got := get(t, url, "wrong"); got != 401 {
		t.Fatalf("list with wrong key: %d", got)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestRunCatalogueAndScenes(t *testing.T) {
	url, stop := serve(t, "-key", "k2", "-catalogue", filepath.Join(fixtures, "list_devices_2.json"),
		"-scenes", filepath.Join(fixtures, "scenes.json"), "-errors-as-200")
	body := `{"requestId":"1","payload":{"sku":"H6072","device":"AA:BB:CC:DD:AA:BB:CC:DD"}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/router/api/v1/device/scenes", strings.NewReader(body))
	req.Header.Set("Service-API-Key", "k2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"paramId":11837`) {
		t.Fatalf("scenes from -scenes not served: %s", b)
	}
	req, _ = http.NewRequest(http.MethodPost, url+"/router/api/v1/device/state", strings.NewReader(`{"requestId":"1","payload":{"sku":"H6072","device":"nope"}}`))
	req.Header.Set("Service-API-Key", "k2")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"code":404`) {
		t.Fatalf("-errors-as-200: %d %s", resp.StatusCode, b)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// -quota: every answer says what is left, and the request beyond it is
// answered 429 with Retry-After.
func TestRunQuota(t *testing.T) {
	url, stop := serve(t, "-key", "k3", "-quota", "2", "-quota-window", "1h", "-quota-reset", "unix")
	for i, want := range []int{200, 200, 429} {
		req, _ := http.NewRequest(http.MethodGet, url+"/router/api/v1/user/devices", nil)
		req.Header.Set("Service-API-Key", "k3")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		left := resp.Header.Get("API-RateLimit-Remaining")
		reset, _ := strconv.ParseInt(resp.Header.Get("API-RateLimit-Reset"), 10, 64)
		if resp.StatusCode != want || resp.Header.Get("API-RateLimit-Limit") != "2" || left != strconv.Itoa(max(1-i, 0)) ||
			time.Until(time.Unix(reset, 0)) > time.Hour || time.Until(time.Unix(reset, 0)) < 0 {
			t.Errorf("request %d: HTTP %d, headers %v", i+1, resp.StatusCode, resp.Header)
		}
		if want == 429 && resp.Header.Get("Retry-After") == "" {
			t.Error("the 429 has no Retry-After")
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// -latency: no answer comes sooner than the delay.
func TestRunLatency(t *testing.T) {
	const latency = 120 * time.Millisecond
	url, stop := serve(t, "-key", "k4", "-latency", "120ms")
	for range 2 {
		start := time.Now()
		if got := get(t, url, "k4"); got != 200 {
			t.Fatalf("list: %d", got)
		}
		if took := time.Since(start); took < latency {
			t.Errorf("answered after %s; -latency is %s", took, latency)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// -tls-cert and -tls-key: HTTPS and HTTP/2, as the live cloud serves, for a
// client that trusts the certificate.
func TestRunTLS(t *testing.T) {
	dir := t.TempDir()
	ca := mqtttest.WriteCerts(t, dir)
	url, stop := serve(t, "-key", "k5", "-tls-cert", filepath.Join(dir, "server.pem"), "-tls-key", filepath.Join(dir, "server.key"))
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("served at %s, want https://", url)
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url+"/router/api/v1/user/devices", nil)
	req.Header.Set("Service-API-Key", "k5")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Errorf("device list: %d over %s, want 200 over HTTP/2.0", resp.StatusCode, resp.Proto)
	}
	tr.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunErrors(t *testing.T) {
	cases := map[string][]string{
		"unknown flag":      {"-nope"},
		"stray argument":    {"serve"},
		"empty key":         {"-key", ""},
		"missing catalogue": {"-catalogue", filepath.Join(t.TempDir(), "none.json")},
		"bad scenes":        {"-scenes", filepath.Join(fixtures, "list_devices.json")},
		"bad address":       {"-addr", "256.0.0.1:1"},
		"negative quota":    {"-quota", "-1"},
		"bad quota window":  {"-quota", "10", "-quota-window", "soon"},
		"zero short window": {"-short-quota", "10", "-short-window", "0s"},
		"bad reset format":  {"-quota", "10", "-quota-reset", "fortnights"},
		"negative latency":  {"-latency", "-5ms"},
		"bad latency":       {"-latency", "soon"},
		"cert without key":  {"-tls-cert", "cert.pem"},
		"missing cert":      {"-tls-cert", filepath.Join(t.TempDir(), "none.pem"), "-tls-key", filepath.Join(t.TempDir(), "none.key")},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			if err := run(context.Background(), args, &out); err == nil {
				t.Fatal("run succeeded")
			}
		})
	}
}
