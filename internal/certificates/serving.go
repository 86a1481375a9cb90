package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// ServingStoreName is the prefix of the serving certificate's files in the
// certificate directory (kubelet-server-current.pem and the dated files it
// points at), as upstream's.
const ServingStoreName = "kubelet-server"

// ErrNoServingCertificate is what the kubelet API's TLS handshake fails
// with until a serving certificate has been issued (or after it expired):
// upstream's text. The listener serves nothing rather than a self-signed
// certificate.
var ErrNoServingCertificate = errors.New("no serving certificate available for the kubelet")

// ServingConfig configures a ServingManager.
type ServingConfig struct {
	// NodeName is the certificate's subject, system:node:NodeName.
	NodeName string
	// CertDir (--cert-dir) keeps the certificates: kubelet-server-*.pem.
	CertDir string
	// CertFile and KeyFile (tlsCertFile, tlsPrivateKeyFile) are, as
	// upstream, the pair the store falls back to while it has no
	// certificate of its own; they are rotated like any other.
	CertFile, KeyFile string
	// Kube is the node's API client, with the node's own identity; nil
	// (standalone mode) never requests a certificate, as upstream.
	Kube kubernetes.Interface
	// Addresses are the addresses the node reports in its status, the SANs
	// of the certificate (upstream reads them back from its node informer;
	// actorlet's are fixed at start-up, so they are handed over, not
	// watched for). No certificate is requested without an IP address.
	Addresses func() []v1.NodeAddress
	// AllowDNSOnly is the AllowDNSOnlyNodeCSR feature gate: a host name
	// without any IP is enough to request a certificate.
	AllowDNSOnly bool
	Log          zerolog.Logger
}

// ServingManager requests, keeps and rotates the kubelet API's serving
// certificate through CertificateSigningRequests for the
// kubernetes.io/kubelet-serving signer: client-go's certificate manager,
// configured as upstream's kubelet configures it.
type ServingManager struct {
	certificate.Manager
	log zerolog.Logger

	mu      sync.Mutex
	started bool
	stopped bool
}

// NewServingManager loads the stored serving certificate, if any, and
// prepares the requests of new ones; Start begins them.
func NewServingManager(c ServingConfig) (*ServingManager, error) {
	store, err := certificate.NewFileStore(ServingStoreName, c.CertDir, c.CertDir, c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate store in %s: %w", c.CertDir, err)
	}
	m := &ServingManager{log: c.Log}
	addresses := c.Addresses
	if addresses == nil {
		addresses = func() []v1.NodeAddress { return nil }
	}
	var clientset certificate.ClientsetFunc
	if c.Kube != nil {
		kube := c.Kube
		clientset = func(*tls.Certificate) (kubernetes.Interface, error) { return kube, nil }
	}
	name, allowDNSOnly := c.NodeName, c.AllowDNSOnly
	m.Manager, err = certificate.NewManager(&certificate.Config{
		Name:        "kubelet-serving",
		ClientsetFn: clientset,
		GetTemplate: func() *x509.CertificateRequest {
			return servingTemplate(name, addresses(), allowDNSOnly)
		},
		SignerName:              certificatesv1.KubeletServingSignerName,
		GetUsages:               certificate.DefaultKubeletServingGetUsages,
		CertificateStore:        store,
		CertificateRotation:     servingRotation,
		CertificateRenewFailure: servingRenewErrors,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	registerServingMetrics()
	return m, nil
}

// Start begins requesting and rotating the certificate, in the background. Only the first call counts.
func (m *ServingManager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.stopped {
		return
	}
	m.started = true
	servingStarted.Store(m)
	if c := m.Current(); c != nil && c.Leaf != nil {
		m.log.Info().Str("subject", c.Leaf.Subject.String()).Time("notAfter", c.Leaf.NotAfter).
			Msg("serving certificate loaded; it is rotated through kubernetes.io/kubelet-serving CSRs")
	} else {
		m.log.Info().Msg("no serving certificate yet: the kubelet API serves nothing until a kubernetes.io/kubelet-serving CSR is approved and issued")
	}
	m.Manager.Start()
}

// Stop ends the requests; the manager cannot start again.
func (m *ServingManager) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	servingStarted.CompareAndSwap(m, nil)
	m.Manager.Stop()
}

// GetCertificate is the kubelet API's tls.Config.GetCertificate: each
// handshake gets the current certificate, so a rotated one is served from
// the next handshake on; without one the handshake fails.
func (m *ServingManager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return currentOrError(m.Current())
}

func currentOrError(c *tls.Certificate) (*tls.Certificate, error) {
	if c == nil {
		return nil, ErrNoServingCertificate
	}
	return c, nil
}

// servingTemplate is the CSR's template for the node's addresses, as
// upstream's: nil (no request yet) while the node has no IP address, or no
// address at all with allowDNSOnly.
func servingTemplate(nodeName string, addresses []v1.NodeAddress, allowDNSOnly bool) *x509.CertificateRequest {
	hostnames, ips := hostnamesAndIPs(addresses)
	if len(ips) == 0 && (!allowDNSOnly || len(hostnames) == 0) {
		return nil
	}
	return &x509.CertificateRequest{
		Subject: pkix.Name{
			CommonName:   "system:node:" + nodeName,
			Organization: []string{"system:nodes"},
		},
		DNSNames:    hostnames,
		IPAddresses: ips,
	}
}

// hostnamesAndIPs sorts the node's addresses into the certificate's DNS and
// IP SANs, without duplicates and in a stable order (the manager compares
// templates to see whether the addresses changed): host names and DNS
// addresses are DNS names, except a host name that is an IP; internal and
// external IPs are IPs.
func hostnamesAndIPs(addresses []v1.NodeAddress) ([]string, []net.IP) {
	var hostnames []string
	var ips []net.IP
	addIP := func(ip net.IP) {
		if !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	addName := func(name string) {
		if !slices.Contains(hostnames, name) {
			hostnames = append(hostnames, name)
		}
	}
	for _, a := range addresses {
		if a.Address == "" {
			continue
		}
		switch a.Type {
		case v1.NodeHostName:
			if ip := net.ParseIP(a.Address); ip != nil {
				addIP(ip)
			} else {
				addName(a.Address)
			}
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				addIP(ip)
			}
		case v1.NodeInternalDNS, v1.NodeExternalDNS:
			addName(a.Address)
		}
	}
	slices.Sort(hostnames)
	slices.SortFunc(ips, func(a, b net.IP) int {
		switch x, y := a.String(), b.String(); {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return hostnames, ips
}
