// Package apisource implements volume.Sources through the node's own
// client: the Node authorizer lets a node read only the objects that the
// pods bound to it reference, so everything here is asked for as the node.
//
// ConfigMaps and Secrets come from a watch per referenced object (upstream's
// watch-based manager): RegisterPod counts a pod's references and starts a
// single-object watch on the first one, UnregisterPod stops it after the
// last, and a change of a watched object is reported through
// Options.OnChange so that the pods that use it are refreshed.
// Service-account tokens come from the TokenRequest API through a cache
// with upstream's token manager's refresh rule; cluster trust bundles from
// an informer on the served ClusterTrustBundle version; pod certificates
// from PodCertificateRequests the node creates for each podCertificate
// projection of a registered pod (upstream's pod certificate manager),
// watched through the node's requests, an issued one told through
// OnChange with KindPod; claims and persistent volumes from plain GETs.
package apisource
