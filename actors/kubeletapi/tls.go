package kubeletapi

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
)

// TLSOptions are the kubelet API's TLS settings beyond its certificate:
// tlsMinVersion, tlsCipherSuites and tlsCurvePreferences, as upstream's
// InitializeTLS reads them.
type TLSOptions struct {
	// MinVersion is the lowest TLS version served; 0 means TLS 1.2,
	// upstream's default.
	MinVersion uint16
	// CipherSuites are the TLS 1.0-1.2 suites served; nil means Go's
	// defaults. TLS 1.3's are not configurable.
	CipherSuites []uint16
	// CurvePreferences are the key exchanges offered; nil means Go's
	// defaults.
	CurvePreferences []tls.CurveID
}

// ParseTLSOptions reads the configuration's TLS settings with
// component-base's parsers, as upstream; an invalid value is an error
// naming its field (config.Validate refuses such a configuration before
// anything starts). The warnings are upstream's: an insecure cipher
// suite, and cipher suites given with TLS 1.3 as the minimum.
func ParseTLSOptions(minVersion string, cipherSuites []string, curves []int32) (TLSOptions, []string, error) {
	var o TLSOptions
	var warnings []string
	var err error
	if o.CipherSuites, err = cliflag.TLSCipherSuites(cipherSuites); err != nil {
		return TLSOptions{}, nil, fmt.Errorf("tlsCipherSuites: %w", err)
	}
	insecure := cliflag.InsecureTLSCiphers()
	for _, name := range cipherSuites {
		if _, ok := insecure[name]; ok {
			warnings = append(warnings, "use of insecure cipher suite "+name)
		}
	}
	if o.MinVersion, err = cliflag.TLSVersion(minVersion); err != nil {
		return TLSOptions{}, nil, fmt.Errorf("tlsMinVersion: %w", err)
	}
	if o.MinVersion == tls.VersionTLS13 && len(o.CipherSuites) > 0 {
		warnings = append(warnings, "TLS 1.3 cipher suites are not configurable: tlsCipherSuites only applies to clients that cannot speak TLS 1.3, and none may connect with tlsMinVersion VersionTLS13")
	}
	if o.CurvePreferences, err = cliflag.TLSCurvePreferences(curves); err != nil {
		return TLSOptions{}, nil, fmt.Errorf("tlsCurvePreferences: %w", err)
	}
	return o, warnings, nil
}

// ServingCertificateFiles settles the files of the kubelet API's serving
// certificate: those of tlsCertFile/tlsPrivateKeyFile when set, otherwise,
// as upstream, a self-signed pair kept as kubelet.crt/kubelet.key in the
// certificate directory, generated on first start for the node's name and
// addresses. Either pair is reloaded when it changes on disk
// (certificates.FileServing). With serverTLSBootstrap neither is used: the
// certificate comes from CSRs (certificates.ServingManager, through
// Params.GetServingCert).
func ServingCertificateFiles(certFile, keyFile, certDir, nodeName string, nodeIP net.IP) (string, string, error) {
	if certFile == "" && keyFile == "" {
		certFile = filepath.Join(certDir, "kubelet.crt")
		keyFile = filepath.Join(certDir, "kubelet.key")
		if ok, _ := certutil.CanReadCertAndKey(certFile, keyFile); !ok {
			if err := generateSelfSigned(certFile, keyFile, nodeName, nodeIP); err != nil {
				return "", "", err
			}
		}
	}
	return certFile, keyFile, nil
}

// ServingCertificate loads the pair of ServingCertificateFiles once: the
// certificate when ReloadKubeletServerCertificateFile is off.
func ServingCertificate(certFile, keyFile, certDir, nodeName string, nodeIP net.IP) (tls.Certificate, error) {
	certFile, keyFile, err := ServingCertificateFiles(certFile, keyFile, certDir, nodeName, nodeIP)
	if err != nil {
		return tls.Certificate{}, err
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
