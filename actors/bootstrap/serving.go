package bootstrap

import (
	"crypto/tls"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/kubeletapi"
	"github.com/actorlet/actorlet/actors/statusreporter"
	"github.com/actorlet/actorlet/internal/certificates"
)

// servingCertificate settles where the kubelet API's certificate comes
// from, with upstream's precedence: with serverTLSBootstrap and the
// RotateKubeletServerCertificate gate, from kubernetes.io/kubelet-serving
// CSRs (tlsCertFile/tlsPrivateKeyFile, if given, only stand in until the
// first one is issued, as upstream's certificate store has them); else the
// files of tlsCertFile/tlsPrivateKeyFile; else a self-signed certificate.
// Either file pair is reloaded when it changes on disk while the
// ReloadKubeletServerCertificateFile gate is on (its default), as
// upstream's. The manager or the files' watch starts here, once the node's
// API client exists, and stops with the dependencies. (serverTLSBootstrap
// with the gate off is refused by config.Validate, as upstream.) The
// TLS settings are parsed here too, as upstream's InitializeTLS.
func (a *Actor) servingCertificate() error {
	c, o, deps := a.cfg, a.cmdline.Options, a.deps
	opts, warnings, err := kubeletapi.ParseTLSOptions(c.TLSMinVersion, c.TLSCipherSuites, c.TLSCurvePreferences)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		a.log.Warn().Msg(w)
	}
	a.apiTLS = opts
	if c.ServerTLSBootstrap && a.gates.Enabled("RotateKubeletServerCertificate") {
		if deps.Kube == nil {
			a.log.Warn().Msg("serverTLSBootstrap without --kubeconfig: no serving certificate can be requested; " +
				"the kubelet API serves nothing unless tlsCertFile/tlsPrivateKeyFile or a stored certificate is valid")
		}
		m, err := certificates.NewServingManager(certificates.ServingConfig{
			NodeName: deps.NodeName, CertDir: o.CertDir, CertFile: c.TLSCertFile, KeyFile: c.TLSPrivateKeyFile,
			Kube:         deps.Kube,
			Addresses:    func() []v1.NodeAddress { return statusreporter.NodeAddresses(deps.NodeIP, deps.NodeName) },
			AllowDNSOnly: a.gates.Enabled("AllowDNSOnlyNodeCSR"),
			Log:          a.log.With().Str("component", "serving-certificate").Logger(),
		})
		if err != nil {
			return err
		}
		a.servingCerts = m
		m.Start()
		return nil
	}
	if a.gates.Enabled("ReloadKubeletServerCertificateFile") {
		certFile, keyFile, err := kubeletapi.ServingCertificateFiles(c.TLSCertFile, c.TLSPrivateKeyFile, o.CertDir, deps.NodeName, deps.NodeIP)
		if err != nil {
			return err
		}
		f, err := certificates.NewFileServing(certFile, keyFile, a.log.With().Str("component", "serving-certificate").Logger())
		if err != nil {
			return err
		}
		a.servingFiles = f
		f.Start()
		return nil
	}
	cert, err := kubeletapi.ServingCertificate(c.TLSCertFile, c.TLSPrivateKeyFile, o.CertDir, deps.NodeName, deps.NodeIP)
	if err != nil {
		return err
	}
	a.apiCert = &cert
	return nil
}

// getServingCert is the kubelet API's GetServingCert: nil unless the
// certificate comes from CSRs or from files that are reloaded.
func (a *Actor) getServingCert() func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	switch {
	case a.servingCerts != nil:
		return a.servingCerts.GetCertificate
	case a.servingFiles != nil:
		return a.servingFiles.GetCertificate
	}
	return nil
}

// stopServingCertificate stops the serving certificate's requests and
// rotation, before the client they use goes, and the watch of its files.
func (a *Actor) stopServingCertificate() {
	if a.servingCerts != nil {
		a.servingCerts.Stop()
	}
	if a.servingFiles != nil {
		a.servingFiles.Stop()
	}
}
