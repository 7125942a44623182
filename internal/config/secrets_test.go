package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTLSFiles writes a self-signed CA certificate, used also as the client
// certificate, and its key, returning the three paths.
func writeTLSFiles(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cloud2mqtt test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert = filepath.Join(dir, "client.pem")
	key = filepath.Join(dir, "client.key")
	ca = filepath.Join(dir, "ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	writeFile(t, cert, string(certPEM))
	writeFile(t, ca, string(certPEM))
	writeFile(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	return ca, cert, key
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsFromFilesAndCredentials(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api_key")
	writeFile(t, keyFile, "key-from-file\n")
	pwFile := filepath.Join(dir, "mqtt_password")
	writeFile(t, pwFile, "pw from file \r\n\n") // inner and trailing spaces are the password's
	creds := filepath.Join(dir, "credentials")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(creds, "cloud_api_key"), "key-from-credential\n")
	writeFile(t, filepath.Join(creds, "mqtt_password"), "pw-from-credential")

	cases := []struct {
		name              string
		environ           map[string]string
		wantKey, wantPW   string
		keySrc, pwSrc     string
		wantErr           []string
		errMustNotContain []string
	}{
		{name: "variables", environ: map[string]string{"CLOUD_API_KEY": "key-var", "MQTT_PASSWORD": "pw-var", "CREDENTIALS_DIRECTORY": creds},
			wantKey: "key-var", wantPW: "pw-var", keySrc: "CLOUD_API_KEY", pwSrc: "MQTT_PASSWORD"},
		{name: "files trimmed of the trailing newline", environ: map[string]string{"CLOUD_API_KEY_FILE": keyFile, "MQTT_PASSWORD_FILE": pwFile, "CREDENTIALS_DIRECTORY": creds},
			wantKey: "key-from-file", wantPW: "pw from file ", keySrc: "CLOUD_API_KEY_FILE", pwSrc: "MQTT_PASSWORD_FILE"},
		{name: "systemd credentials", environ: map[string]string{"CREDENTIALS_DIRECTORY": creds},
			wantKey: "key-from-credential", wantPW: "pw-from-credential", keySrc: "systemd credential cloud_api_key", pwSrc: "systemd credential mqtt_password"},
		{name: "credential directory without the optional password", environ: map[string]string{"CREDENTIALS_DIRECTORY": t.TempDir(), "CLOUD_API_KEY": "k"},
			wantKey: "k", wantPW: "", keySrc: "CLOUD_API_KEY", pwSrc: ""},
		{name: "no secrets anywhere", environ: map[string]string{}},
		{name: "the unit's empty stand-in credential is no key", environ: map[string]string{"CREDENTIALS_DIRECTORY": writeCredDir(t, "cloud_api_key", "\n")}},
		{name: "variable and file both set", environ: map[string]string{"CLOUD_API_KEY": "key-var-both", "CLOUD_API_KEY_FILE": keyFile, "MQTT_PASSWORD": "pw-var-both", "MQTT_PASSWORD_FILE": pwFile},
			wantErr:           []string{"CLOUD_API_KEY and CLOUD_API_KEY_FILE are both set: set only one of them", "MQTT_PASSWORD and MQTT_PASSWORD_FILE are both set"},
			errMustNotContain: []string{"key-var-both", "pw-var-both", "key-from-file"}},
		{name: "missing file", environ: map[string]string{"CLOUD_API_KEY_FILE": filepath.Join(dir, "nope")},
			wantErr: []string{"CLOUD_API_KEY_FILE: cannot read the file: no such file or directory"}},
		{name: "unreadable file (a directory)", environ: map[string]string{"MQTT_PASSWORD_FILE": creds},
			wantErr: []string{"MQTT_PASSWORD_FILE: cannot read the file"}},
		{name: "empty file", environ: map[string]string{"CLOUD_API_KEY_FILE": writeTemp(t, dir, "empty", "\n")},
			wantErr: []string{"CLOUD_API_KEY_FILE: the file is empty"}},
		{name: "key pasted into the file variable", environ: map[string]string{"CLOUD_API_KEY_FILE": "pasted-key-0123"},
			wantErr:           []string{"CLOUD_API_KEY_FILE is not an absolute path"},
			errMustNotContain: []string{"pasted-key-0123"}},
		{name: "unreadable credential", environ: map[string]string{"CREDENTIALS_DIRECTORY": writeTemp(t, dir, "not-a-dir", "x")},
			wantErr: []string{"systemd credential cloud_api_key (for CLOUD_API_KEY)", "LoadCredential=cloud_api_key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.environ)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load succeeded, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				for _, w := range tc.errMustNotContain {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error reveals %q:\n%v", w, err)
					}
				}
				// Validate does not add "CLOUD_API_KEY is empty" on top.
				if verr := cfg.Validate(); verr != nil && strings.Contains(verr.Error(), "CLOUD_API_KEY is empty") && strings.Contains(err.Error(), "CLOUD_API_KEY") {
					t.Errorf("Validate repeats the key problem: %v", verr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := cfg.Cloud.APIKey.Reveal(); got != tc.wantKey {
				t.Errorf("API key = %q, want %q", got, tc.wantKey)
			}
			if got := cfg.MQTT.Password.Reveal(); got != tc.wantPW {
				t.Errorf("password = %q, want %q", got, tc.wantPW)
			}
			if cfg.APIKeySource() != tc.keySrc || cfg.PasswordSource() != tc.pwSrc {
				t.Errorf("sources = %q, %q; want %q, %q", cfg.APIKeySource(), cfg.PasswordSource(), tc.keySrc, tc.pwSrc)
			}
			// The check report says where a secret came from.
			for _, row := range cfg.Table() {
				if row[0] == "CLOUD_API_KEY" && tc.keySrc != "" && row[1] != "*** (from "+tc.keySrc+")" {
					t.Errorf("CLOUD_API_KEY row = %q", row[1])
				}
			}
		})
	}
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, content)
	return p
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// writeCredDir makes a credentials directory holding one credential.
func writeCredDir(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, name), content)
	return dir
}
