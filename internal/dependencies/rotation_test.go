package dependencies

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// TestRotateClientCertificate checks which kubeconfigs the node's clients
// reach through the rotating client certificate.
func TestRotateClientCertificate(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("system:node:a", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		rotate   bool
		auth     func(dir string) *clientcmdapi.AuthInfo
		rotating bool
		wantLog  string
	}{
		{"rotation off", false, func(dir string) *clientcmdapi.AuthInfo {
			return &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
		}, false, ""},
		{"a token: nothing to rotate", true, func(string) *clientcmdapi.AuthInfo {
			return &clientcmdapi.AuthInfo{Token: "secret-token"}
		}, false, "nothing to rotate"},
		{"certificate files", true, func(dir string) *clientcmdapi.AuthInfo {
			cert, key := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
			_ = os.WriteFile(cert, certPEM, 0o600)
			_ = os.WriteFile(key, keyPEM, 0o600)
			return &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
		}, true, "rotation is on"},
		{"embedded certificate", true, func(string) *clientcmdapi.AuthInfo {
			return &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
		}, true, "rotation is on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			if err := clientcmd.WriteToFile(clientcmdapi.Config{
				Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:6443", InsecureSkipTLSVerify: true}},
				AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": tc.auth(dir)},
				Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
				CurrentContext: "x",
			}, kubeconfig); err != nil {
				t.Fatal(err)
			}
			in := Input{Kubeconfig: kubeconfig, KubeAPIQPS: 7, KubeAPIBurst: 9, RotateCertificates: tc.rotate, CertDir: filepath.Join(dir, "pki")}
			cfg, err := kubeConfig(kubeconfig, in.KubeAPIQPS, in.KubeAPIBurst, in.ContentType)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			d := &Dependencies{NodeName: "a"}
			defer d.Close()
			got, err := d.rotateClientCertificate(in, cfg, zerolog.New(&logs))
			if err != nil {
				t.Fatal(err)
			}
			if rotating := d.ClientCertificates != nil; rotating != tc.rotating || (got.Transport != nil) != tc.rotating {
				t.Fatalf("rotating = %v (transport %v), want %v", rotating, got.Transport != nil, tc.rotating)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log %q lacks %q", logs.String(), tc.wantLog)
			}
			if strings.Contains(logs.String(), "secret-token") {
				t.Error("the token reached the log")
			}
			if got.QPS != 7 || got.Burst != 9 || got.UserAgent != cfg.UserAgent || got.ContentType != cfg.ContentType {
				t.Errorf("client settings lost: QPS %v, burst %d, user agent %q, content type %q", got.QPS, got.Burst, got.UserAgent, got.ContentType)
			}
			// client-go accepts the configurations of the three clients.
			if _, err := kubernetes.NewForConfig(got); err != nil {
				t.Errorf("main client: %v", err)
			}
			if _, err := kubernetes.NewForConfig(heartbeatConfig(got, 0, 0)); err != nil {
				t.Errorf("heartbeat client: %v", err)
			}
			if _, err := kubernetes.NewForConfig(eventConfig(got, 1, 1)); err != nil {
				t.Errorf("events client: %v", err)
			}
		})
	}
}
