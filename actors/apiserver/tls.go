package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// ServingCertificate loads the kubelet API's serving certificate: the files of
// tlsCertFile/tlsPrivateKeyFile when set, otherwise, as upstream, a
// self-signed one kept as kubelet.crt/kubelet.key in the certificate
// directory, generated on first start for the node's name and addresses.
// With serverTLSBootstrap neither is used: the certificate comes from CSRs
// (certificates.ServingManager, through Params.GetServingCert).
func ServingCertificate(certFile, keyFile, certDir, nodeName string, nodeIP net.IP) (tls.Certificate, error) {
	if certFile == "" && keyFile == "" {
		certFile = filepath.Join(certDir, "kubelet.crt")
		keyFile = filepath.Join(certDir, "kubelet.key")
		if ok, _ := certutil.CanReadCertAndKey(certFile, keyFile); !ok {
			if err := generateSelfSigned(certFile, keyFile, nodeName, nodeIP); err != nil {
				return tls.Certificate{}, err
			}
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate %s with key %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

func generateSelfSigned(certFile, keyFile, nodeName string, nodeIP net.IP) error {
	var ips []net.IP
	if nodeIP != nil && !nodeIP.IsUnspecified() {
		ips = append(ips, nodeIP)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(nodeName, ips, nil)
	if err != nil {
		return fmt.Errorf("generate a self-signed serving certificate for %s: %w", nodeName, err)
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o755); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	if err := certutil.WriteCert(certFile, certPEM); err != nil {
		return fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return fmt.Errorf("write %s: %w", keyFile, err)
	}
	return nil
}
