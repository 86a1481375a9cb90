package bootstrap

import (
	"crypto/tls"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/apiserver"
	"github.com/actorlet/actorlet/actors/statusreporter"
	"github.com/actorlet/actorlet/certificates"
)

// servingCertificate settles where the kubelet API's certificate comes
// from, with upstream's precedence: with serverTLSBootstrap and the
// RotateKubeletServerCertificate gate, from kubernetes.io/kubelet-serving
// CSRs (tlsCertFile/tlsPrivateKeyFile, if given, only stand in until the
// first one is issued, as upstream's certificate store has them); else the
// files of tlsCertFile/tlsPrivateKeyFile; else a self-signed certificate.
// The manager starts here, once the node's API client exists, and stops
// with the dependencies. (serverTLSBootstrap with the gate off is refused
// by config.Validate, as upstream.)
func (a *Actor) servingCertificate() error {
	c, o, deps := a.cfg, a.cmdline.Options, a.deps
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
	cert, err := apiserver.ServingCertificate(c.TLSCertFile, c.TLSPrivateKeyFile, o.CertDir, deps.NodeName, deps.NodeIP)
	if err != nil {
		return err
	}
	a.apiCert = &cert
	return nil
}

// getServingCert is the kubelet API's GetServingCert: nil unless the
// certificate comes from CSRs.
func (a *Actor) getServingCert() func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if a.servingCerts == nil {
		return nil
	}
	return a.servingCerts.GetCertificate
}

// stopServingCertificate stops the serving certificate's requests and
// rotation, before the client they use goes.
func (a *Actor) stopServingCertificate() {
	if a.servingCerts != nil {
		a.servingCerts.Stop()
	}
}
