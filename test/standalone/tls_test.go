package standalone

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/actorlet/actorlet/internal/certificates"
	"github.com/actorlet/actorlet/test/agent"
)

// TestKubeletAPITLSSettings: the kubelet API of a running actorlet follows
// tlsMinVersion (a TLS 1.2 client is refused with VersionTLS13), and serves
// its self-signed certificate's files anew once they are replaced on disk,
// as upstream with ReloadKubeletServerCertificateFile; an unknown
// tlsMinVersion stops actorlet at its start, naming the field.
func TestKubeletAPITLSSettings(t *testing.T) {
	n := &node{agent.NewNode(t, binary, agent.NamePrefix("sa-"), agent.WithConfig("tlsMinVersion: VersionTLS13\n"))}
	n.Start()
	addr := fmt.Sprintf("127.0.0.1:%d", n.Port)
	handshake := func(c *tls.Config) (*tls.ConnectionState, error) {
		c.InsecureSkipVerify = true // the node's self-signed certificate
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, c)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		s := conn.ConnectionState()
		return &s, nil
	}
	if s, err := handshake(&tls.Config{MaxVersion: tls.VersionTLS12}); err == nil {
		t.Errorf("a TLS 1.2 client got %s with tlsMinVersion VersionTLS13", tls.VersionName(s.Version))
	} else if !strings.Contains(err.Error(), "protocol version not supported") {
		t.Errorf("a TLS 1.2 client: %v, want the version refused", err)
	}
	s, err := handshake(&tls.Config{})
	if err != nil {
		t.Fatalf("a TLS 1.3 client: %v", err)
	}
	first := s.PeerCertificates[0].Subject.CommonName

	// Replace the self-signed pair, each file renamed over the old one.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("replaced", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"kubelet.crt": certPEM, "kubelet.key": keyPEM} {
		path := filepath.Join(n.CertDir, name)
		if err := os.WriteFile(path+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	n.Eventually("the replaced certificate is served", 3*certificates.FileRefreshPeriod, func() error {
		s, err := handshake(&tls.Config{})
		if err != nil {
			return err
		}
		if cn := s.PeerCertificates[0].Subject.CommonName; !strings.HasPrefix(cn, "replaced") {
			return fmt.Errorf("served %q (was %q)", cn, first)
		}
		return nil
	})

	n.Stop(syscall.SIGTERM)
	n.Configure("tlsMinVersion: TLS13\n")
	n.Launch()
	code, exited := n.Proc.ExitCode(30 * time.Second)
	if !exited || code == 0 {
		t.Fatalf("with tlsMinVersion TLS13: exited %v, code %d; want a failed start", exited, code)
	}
	if logs := n.Proc.Logs(); !strings.Contains(logs, `tlsMinVersion: Invalid value: "TLS13"`) {
		t.Errorf("the failed start does not name tlsMinVersion:\n%s", logs)
	}
}
