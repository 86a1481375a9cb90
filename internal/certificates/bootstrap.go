package certificates

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
)

// ClientPairPrefix names the client certificate's files in the cert
// directory, as upstream: kubelet-client-current.pem and the dated files it
// points at.
const ClientPairPrefix = "kubelet-client"

// tmpPrivateKeyFile keeps the key of a bootstrap in progress, upstream's
// name: a restart reuses it, so that the CSR it sent (named after the key)
// is found again instead of a new one being made.
const tmpPrivateKeyFile = "kubelet-client.key.tmp"

// Upstream's bounds of a bootstrap: how long it waits for the API server to
// answer before it sends the CSR anyway, and for the CSR to be approved and
// issued.
const (
	defaultServerWait      = time.Minute
	defaultApprovalTimeout = time.Hour
	defaultReportEvery     = 30 * time.Second
)

// BootstrapConfig is what Bootstrap needs.
type BootstrapConfig struct {
	Kubeconfig          string // --kubeconfig, written on success
	BootstrapKubeconfig string // --bootstrap-kubeconfig
	CertDir             string // --cert-dir
	NodeName            string
	Log                 zerolog.Logger

	// NewClient builds the client that sends the CSR from the bootstrap
	// credentials; nil is kubernetes.NewForConfig. Tests pass a fake.
	NewClient func(*rest.Config) (kubernetes.Interface, error)
	// ServerWait bounds the wait for the API server's /healthz before the
	// CSR is sent; zero is upstream's minute.
	ServerWait time.Duration
	// ApprovalTimeout bounds the wait for the CSR to be approved and
	// issued; zero is upstream's hour.
	ApprovalTimeout time.Duration
	// ReportEvery is how often the wait for approval is logged; zero is 30 s.
	ReportEvery time.Duration
}

// Bootstrap is upstream's LoadClientCert: when the kubeconfig holds a
// usable client certificate it does nothing and returns false; otherwise
// it gets the node a client certificate through a CSR sent with the
// bootstrap credentials, stores it in the cert directory and writes the
// kubeconfig that uses it, and returns true. The error of a CSR that is
// denied, fails or is never issued names the CSR.
func Bootstrap(ctx context.Context, c BootstrapConfig) (bool, error) {
	ok, why, err := KubeconfigValid(c.Kubeconfig)
	if err != nil {
		return false, err
	}
	if ok {
		c.Log.Info().Str("kubeconfig", c.Kubeconfig).Msg("the kubeconfig's client certificate is valid: no TLS bootstrap")
		return false, nil
	}
	c.Log.Info().Str("kubeconfig", c.Kubeconfig).Str("reason", why).Str("bootstrapKubeconfig", c.BootstrapKubeconfig).
		Msg("TLS bootstrap: requesting a client certificate with the bootstrap credentials")

	bootstrapConfig, err := LoadKubeconfig(c.BootstrapKubeconfig)
	if err != nil {
		return false, fmt.Errorf("bootstrap kubeconfig %s: %w", c.BootstrapKubeconfig, err)
	}
	newClient := c.NewClient
	if newClient == nil {
		newClient = func(cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }
	}
	client, err := newClient(bootstrapConfig)
	if err != nil {
		return false, fmt.Errorf("bootstrap kubeconfig %s: %w", c.BootstrapKubeconfig, err)
	}
	certDir, err := filepath.Abs(c.CertDir)
	if err != nil {
		return false, fmt.Errorf("cert directory %q: %w", c.CertDir, err)
	}
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		return false, fmt.Errorf("cert directory: %w", err)
	}
	store, err := certificate.NewFileStore(ClientPairPrefix, certDir, certDir, "", "")
	if err != nil {
		return false, fmt.Errorf("cert directory %s: client certificate store: %w", certDir, err)
	}

	// The key of the last certificate, even an expired one, is reused, as
	// upstream; else the key of an unfinished bootstrap, else a new one,
	// kept in its own file until the certificate is stored.
	var keyData []byte
	if cert, err := store.Current(); err == nil && cert.PrivateKey != nil {
		if data, err := keyutil.MarshalPrivateKeyToPEM(cert.PrivateKey); err == nil {
			keyData = data
		}
	}
	keyPath := filepath.Join(certDir, tmpPrivateKeyFile)
	if !validKey(keyData) {
		if keyData, _, err = keyutil.LoadOrGenerateKeyFile(keyPath); err != nil {
			return false, fmt.Errorf("client key %s: %w", keyPath, err)
		}
	}

	serverWait := orDefault(c.ServerWait, defaultServerWait)
	if err := waitForServer(ctx, client, serverWait); err != nil {
		c.Log.Info().Err(err).Msg("TLS bootstrap: the API server did not answer; sending the CSR anyway")
	}
	certData, err := requestNodeCertificate(ctx, c, client, keyData)
	if err != nil {
		return false, err
	}
	if _, err := store.Update(certData, keyData); err != nil {
		return false, fmt.Errorf("store the client certificate in %s: %w", certDir, err)
	}
	if err := os.Remove(keyPath); err != nil && !os.IsNotExist(err) {
		c.Log.Warn().Err(err).Str("path", keyPath).Msg("could not remove the bootstrap's key file")
	}
	if err := writeKubeconfig(bootstrapConfig, c.Kubeconfig, store.CurrentPath()); err != nil {
		return false, fmt.Errorf("write kubeconfig %s: %w", c.Kubeconfig, err)
	}
	c.Log.Info().Str("kubeconfig", c.Kubeconfig).Str("certificate", store.CurrentPath()).
		Msg("TLS bootstrap done: the node's client certificate is issued and the kubeconfig written")
	return true, nil
}

// KubeconfigValid is upstream's isClientConfigStillValid: whether the
// kubeconfig at path exists and holds a client certificate that has not
// expired; when not, why. Only a file that exists but cannot be read is an
// error: an unusable one is bootstrapped over, as upstream.
func KubeconfigValid(path string) (ok bool, why string, err error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return false, "the kubeconfig does not exist", nil
	} else if err != nil {
		return false, "", fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		return false, fmt.Sprintf("the kubeconfig cannot be loaded: %v", err), nil
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return false, fmt.Sprintf("the kubeconfig's transport: %v", err), nil
	}
	// TLSConfigFor reads the certificate files into tc.TLS.CertData.
	if _, err := transport.TLSConfigFor(tc); err != nil {
		return false, fmt.Sprintf("the kubeconfig's TLS configuration: %v", err), nil
	}
	certs, err := certutil.ParseCertsPEM(tc.TLS.CertData)
	if err != nil || len(certs) == 0 {
		return false, "the kubeconfig has no client certificate", nil
	}
	now := time.Now()
	for _, cert := range certs {
		if now.After(cert.NotAfter) {
			return false, fmt.Sprintf("the kubeconfig's client certificate expired at %s", cert.NotAfter.UTC().Format(time.RFC3339)), nil
		}
	}
	return true, "", nil
}

// LoadKubeconfig reads a kubeconfig's current context as a rest.Config,
// relative paths resolved against the file's directory.
func LoadKubeconfig(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	loaded, err := rules.Load()
	if err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*loaded, loaded.CurrentContext, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
}

// writeKubeconfig is upstream's writeKubeconfigFromBootstrapping: the
// bootstrap kubeconfig's server and CA, and the client certificate and key
// in pemPath (the store's current file, which holds both).
func writeKubeconfig(bootstrap *rest.Config, path, pemPath string) error {
	caFile, caData := bootstrap.CAFile, []byte{}
	if caFile == "" {
		caData = bootstrap.CAData
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server:                   bootstrap.Host,
			InsecureSkipTLSVerify:    bootstrap.Insecure,
			CertificateAuthority:     caFile,
			CertificateAuthorityData: caData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {
			ClientCertificate: pemPath,
			ClientKey:         pemPath,
		}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster:   "default-cluster",
			AuthInfo:  "default-auth",
			Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	return clientcmd.WriteToFile(cfg, path)
}

func validKey(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	_, err := keyutil.ParsePrivateKeyPEM(data)
	return err == nil
}

// waitForServer polls the API server's /healthz every 2 s until it answers
// or within passes, as upstream does before it sends the CSR.
func waitForServer(ctx context.Context, client kubernetes.Interface, within time.Duration) error {
	rc := client.Discovery().RESTClient()
	if rc == nil {
		return nil // a fake client
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		attempt, stop := context.WithTimeout(ctx, time.Second)
		_, last = rc.Get().AbsPath("/healthz").Do(attempt).Raw()
		stop()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer from /healthz within %v: %w", within, last)
		case <-time.After(2 * time.Second):
		}
	}
}

// requestNodeCertificate is upstream's: a CSR for the node's client
// certificate (CN system:node:NAME, O system:nodes) to signer
// kubernetes.io/kube-apiserver-client-kubelet, named after its key and
// subject so that a restarted bootstrap finds its CSR again, and the wait
// for it to be approved and issued, logged at intervals.
func requestNodeCertificate(ctx context.Context, c BootstrapConfig, client kubernetes.Interface, keyData []byte) ([]byte, error) {
	subject := &pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:" + c.NodeName}
	key, err := keyutil.ParsePrivateKeyPEM(keyData)
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	csrData, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("make the certificate signing request: %w", err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, ok := key.(*rsa.PrivateKey); ok {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("client key: not a crypto.Signer")
	}
	name, err := digestedName(signer.Public(), subject, usages)
	if err != nil {
		return nil, err
	}
	reqName, reqUID, err := csr.RequestCertificateWithContext(ctx, client, csrData, name,
		certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, fmt.Errorf("create certificate signing request %s: %w", name, err)
	}
	timeout := orDefault(c.ApprovalTimeout, defaultApprovalTimeout)
	c.Log.Info().Str("csr", reqName).Str("signer", certificatesv1.KubeAPIServerClientKubeletSignerName).
		Stringer("timeout", timeout).Msg("TLS bootstrap: waiting for the certificate signing request to be approved and issued")

	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done, reporterGone := make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-reporterGone }()
	go func() {
		defer close(reporterGone)
		t := time.NewTicker(orDefault(c.ReportEvery, defaultReportEvery))
		defer t.Stop()
		started := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				c.Log.Info().Str("csr", reqName).Stringer("waited", time.Since(started).Round(time.Second)).
					Msgf("TLS bootstrap: waiting for approval of certificate signing request %s", reqName)
			}
		}
	}()
	certData, err := csr.WaitForCertificate(waitCtx, client, reqName, reqUID)
	switch {
	case err == nil:
		return certData, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("certificate signing request %s: %w", reqName, ctx.Err())
	case waitCtx.Err() != nil:
		return nil, fmt.Errorf("certificate signing request %s was not approved and issued within %v", reqName, timeout)
	default:
		return nil, fmt.Errorf("certificate signing request %s: %w", reqName, err)
	}
}

// digestedName is upstream's CSR name: node-csr- and a digest of the
// public key, the subject and the usages, each part delimited by a
// character outside base64's alphabet so that no two inputs give the same
// stream.
func digestedName(publicKey any, subject *pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	hash := sha512.New512_256()
	encode := base64.RawURLEncoding.EncodeToString
	write := func(data []byte) {
		hash.Write([]byte(encode(data)))
		hash.Write([]byte{'|'})
	}
	der, err := x509.MarshalPKIXPublicKey(publicKey)
	if err != nil {
		return "", err
	}
	write(der)
	write([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		write([]byte(o))
	}
	for _, u := range usages {
		write([]byte(u))
	}
	return "node-csr-" + encode(hash.Sum(nil)), nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
