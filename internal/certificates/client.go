package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/client-go/util/keyutil"
)

// ClientConfig is what NewClient needs.
type ClientConfig struct {
	Kubeconfig          string // --kubeconfig
	BootstrapKubeconfig string // --bootstrap-kubeconfig; empty: none
	CertDir             string // --cert-dir
	NodeName            string
	Log                 zerolog.Logger
	// CheckEvery is how often the transport looks for a new certificate;
	// zero is upstream's 10 s.
	CheckEvery time.Duration
}

// Client rotates the node's client certificate (rotateCertificates) and
// gives the node's API clients a configuration that uses the current one.
type Client struct {
	manager    certificate.Manager
	transport  *rotatingTransport
	config     *rest.Config
	checkEvery time.Duration
	stop       chan struct{}
	stopOnce   sync.Once
}

// HasClientCertificate tells whether a kubeconfig's configuration
// authenticates with a client certificate: only then is there a
// certificate to rotate.
func HasClientCertificate(cfg *rest.Config) bool {
	return cfg.CertFile != "" || len(cfg.CertData) > 0
}

// NewClient builds the client certificate manager of upstream's
// buildClientCertificateManager: the certificates in the cert directory
// under kubelet-client-*, starting from the kubeconfig's certificate
// (its files, or its embedded data, which the manager stores), renewed
// through CSRs at client-go's point, a random moment between 70 % and 90 %
// of the certificate's lifetime. The CSRs are sent with the current
// certificate; once it has expired (the API server was unreachable when it
// was due), with the bootstrap credentials, or the kubeconfig's where there
// are none. Start starts the rotation.
func NewClient(c ClientConfig) (*Client, error) {
	userConfig, err := LoadKubeconfig(c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	// Without its own credentials the node renews with the kubeconfig's.
	// So it does where the bootstrap kubeconfig does not exist: kubeadm
	// init names one in its drop-in but writes the first control-plane
	// node's kubelet.conf with a certificate instead, and upstream's
	// LoadClientConfig never reads the bootstrap file while the
	// kubeconfig's certificate is valid.
	renewalConfig := userConfig
	if c.BootstrapKubeconfig != "" {
		if _, statErr := os.Stat(c.BootstrapKubeconfig); !errors.Is(statErr, fs.ErrNotExist) {
			if renewalConfig, err = LoadKubeconfig(c.BootstrapKubeconfig); err != nil {
				return nil, fmt.Errorf("bootstrap kubeconfig %s: %w", c.BootstrapKubeconfig, err)
			}
		}
	}
	certDir, err := filepath.Abs(c.CertDir)
	if err != nil {
		return nil, fmt.Errorf("cert directory %q: %w", c.CertDir, err)
	}
	store, err := certificate.NewFileStore(ClientPairPrefix, certDir, certDir, userConfig.CertFile, userConfig.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cert directory %s: client certificate store: %w", certDir, err)
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: clientsetFn(userConfig, renewalConfig),
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName:   "system:node:" + c.NodeName,
			Organization: []string{"system:nodes"},
		}},
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:  certificate.DefaultKubeletClientGetUsages,
		// A kubeconfig with the certificate embedded (kubeadm's on control
		// plane nodes) starts the store, and is rotated out at once.
		BootstrapCertificatePEM: userConfig.CertData,
		BootstrapKeyPEM:         userConfig.KeyData,
		CertificateStore:        store,
		Name:                    "kubelet-client",
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	rt, err := newRotatingTransport(userConfig, m, c.Log)
	if err != nil {
		return nil, err
	}
	// The transport presents the manager's certificate: the configuration
	// carries no credentials of its own (client-go refuses a transport
	// together with TLS files or data).
	cfg := rest.AnonymousClientConfig(userConfig)
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = rt
	return &Client{manager: m, transport: rt, config: cfg, checkEvery: orDefault(c.CheckEvery, 10*time.Second),
		stop: make(chan struct{})}, nil
}

// clientsetFn is upstream's newClientsetFn, but for two cases. With a
// current certificate the CSRs go to the kubeconfig's server presenting
// that certificate itself, where upstream reads the kubeconfig's files
// again: the same with kubeadm's kubeconfig, which points at the store's
// current file, and still right with one that points elsewhere. Without
// one (it expired), they go with the bootstrap credentials where given:
// upstream exits the process there, to bootstrap again at its restart;
// here the manager does it in place.
func clientsetFn(userConfig, renewalConfig *rest.Config) certificate.ClientsetFunc {
	return func(current *tls.Certificate) (kubernetes.Interface, error) {
		if current == nil {
			return kubernetes.NewForConfig(renewalConfig)
		}
		cfg := rest.AnonymousClientConfig(userConfig)
		var err error
		if cfg.CertData, cfg.KeyData, err = encodePair(current); err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	}
}

// encodePair is a certificate's chain and key in PEM.
func encodePair(c *tls.Certificate) (certPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(c.PrivateKey); err != nil {
		return nil, nil, fmt.Errorf("current client certificate's key: %w", err)
	}
	return certPEM, keyPEM, nil
}

// Start starts the rotation and the transport's watch of it.
func (c *Client) Start() {
	c.manager.Start()
	go c.transport.run(c.checkEvery, c.stop)
}

// Stop stops the rotation and closes the transport's connections.
func (c *Client) Stop() {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.manager.Stop()
		c.transport.closeAll()
	})
}

// Config is a copy of the configuration of the node's API clients: the
// kubeconfig's server, with the rotating transport.
func (c *Client) Config() *rest.Config { return rest.CopyConfig(c.config) }

// Current is the manager's current certificate, nil when it has none that
// is valid.
func (c *Client) Current() *tls.Certificate { return c.manager.Current() }

// rotatingTransport sends each request with a connection pool of the
// current certificate. When the manager has a new certificate, a new pool
// takes the new requests and the old pool is retired: its requests in
// flight (the node's watches) go on, its connections close once idle, and
// whatever is left closes when its certificate expires, since the API
// server would refuse that identity anyway. Upstream instead closes every
// connection at each rotation, which drops every watch.
type rotatingTransport struct {
	manager certificate.Manager
	tls     *tls.Config // the server's CA and name; no client certificate
	log     zerolog.Logger

	mu      sync.Mutex
	current *pool
	retired []*pool
	// expiredSaid is the expiry of the current pool's certificate, once
	// that has been logged.
	expiredSaid time.Time
}

// pool is the connections made while cert was current (nil: none).
type pool struct {
	cert      *tls.Certificate
	transport *http.Transport
	dialer    *connrotation.Dialer
}

func newRotatingTransport(cfg *rest.Config, m certificate.Manager, log zerolog.Logger) (*rotatingTransport, error) {
	// The CA and server name, without the client certificate.
	tlsConfig, err := rest.TLSConfigFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig's TLS configuration: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	t := &rotatingTransport{manager: m, tls: tlsConfig, log: log.With().Str("component", "client-certificate").Logger()}
	t.current = t.newPool(m.Current())
	return t, nil
}

func (t *rotatingTransport) newPool(cert *tls.Certificate) *pool {
	tlsConfig := t.tls.Clone()
	tlsConfig.Certificates = nil
	// Always the manager's current certificate, as upstream: a pool's new
	// connections are made only while it is current.
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := t.manager.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil
	}
	d := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	return &pool{cert: cert, dialer: d, transport: utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         d.DialContext,
	})}
}

// RoundTrip implements http.RoundTripper.
func (t *rotatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	p := t.current
	t.mu.Unlock()
	return p.transport.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool, for
// utilnet.CloseIdleConnectionsFor.
func (t *rotatingTransport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.current.transport.CloseIdleConnections()
	for _, p := range t.retired {
		p.transport.CloseIdleConnections()
	}
}

func (t *rotatingTransport) run(every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.check(time.Now())
		}
	}
}

// check swaps in a pool for a new certificate and retires old pools.
func (t *rotatingTransport) check(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur := t.manager.Current(); cur != nil && cur != t.current.cert {
		old := t.current
		t.current = t.newPool(cur)
		t.retired = append(t.retired, old)
		ev := t.log.Info()
		if cur.Leaf != nil {
			ev = ev.Str("serial", cur.Leaf.SerialNumber.String()).Time("notAfter", cur.Leaf.NotAfter)
		}
		ev.Msg("client certificate rotated: new connections use the new certificate, open watches go on over the old ones")
	} else if c := t.current.cert; cur == nil && c != nil && c.Leaf != nil && now.After(c.Leaf.NotAfter) && !t.expiredSaid.Equal(c.Leaf.NotAfter) {
		t.expiredSaid = c.Leaf.NotAfter
		t.log.Error().Time("notAfter", c.Leaf.NotAfter).
			Msg("the client certificate has expired: the API server refuses the node until the certificate manager renews it (with the bootstrap credentials when given)")
	}
	kept := t.retired[:0]
	for _, p := range t.retired {
		p.transport.CloseIdleConnections()
		if p.cert == nil || p.cert.Leaf == nil || now.After(p.cert.Leaf.NotAfter) {
			// Without a certificate those connections are anonymous; with
			// an expired one, refused: nothing more goes over them.
			p.dialer.CloseAll()
			continue
		}
		kept = append(kept, p)
	}
	t.retired = kept
}

func (t *rotatingTransport) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.current.dialer.CloseAll()
	for _, p := range t.retired {
		p.dialer.CloseAll()
	}
	t.retired = nil
}
