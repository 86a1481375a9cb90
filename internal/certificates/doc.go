// Package certificates holds the node's certificates that come from the
// cluster through CertificateSigningRequests, as upstream kubelet's
// pkg/kubelet/certificate: the TLS bootstrap of the client certificate
// with the --bootstrap-kubeconfig credentials (Bootstrap), the rotation of
// the client certificate with client-go's certificate manager and a
// transport that picks each new certificate up for new connections without
// closing the node's open watches (Client), and the serving certificate of
// the kubelet API. The certificates live in --cert-dir under upstream's
// file names (kubelet-client-current.pem pointing at a dated file).
package certificates
