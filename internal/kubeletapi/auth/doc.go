// Package auth authenticates and authorizes requests to the kubelet API
// (issue #6), as upstream kubelet v1.37's auth filter does with
// k8s.io/apiserver's delegating authenticator and authorizer. actorlet does
// not depend on k8s.io/apiserver: the few pieces the kubelet uses are here,
// over client-go's TokenReview and SubjectAccessReview clients.
//
// # Authentication
//
// Configured by the KubeletConfiguration's authentication section. The
// methods are tried in upstream's order; the first to recognise the
// request wins:
//
//  1. x509 client certificate, when authentication.x509.clientCAFile is
//     set: verified against that bundle with usage ClientAuth; the user is
//     the certificate's CommonName, its groups the Organizations, its UID
//     the subject's UID attribute (OID 1.3.6.1.4.1.57683.2) if present. A
//     certificate without a CommonName is ignored.
//  2. bearer token, when authentication.webhook.enabled: the token of
//     "Authorization: Bearer …" (or of the WebSocket subprotocol
//     "base64url.bearer.authorization.k8s.io.…") is sent to the API server
//     as a TokenReview (authentication.k8s.io/v1). Answers, authenticated
//     or not, are cached for authentication.webhook.cacheTTL; failed calls
//     and reviews reporting an error are not cached. The header is removed
//     from the request once the token is accepted, so that it is never
//     passed on.
//  3. anonymous, when authentication.anonymous.enabled: user
//     system:anonymous, group system:unauthenticated. It is reached only
//     when no credential was presented: a certificate that fails
//     verification or a token that is refused is a 401, not anonymous.
//
// Users found by a certificate or a token also get the group
// system:authenticated. A request no method authenticates gets 401 with the
// body "Unauthorized". Which paths skip authentication: none on this port
// (upstream's unauthenticated handlers are those of the read-only port).
//
// The client CA bundle is re-read at most every 10 seconds while requests
// come in, as upstream reloads it (ReloadKubeletClientCAFile, on by default
// since 1.36); a changed file that does not parse is logged and the previous
// bundle kept. Filter.TLSConfig gives the listener's tls.Config the current
// bundle with ClientAuth tls.RequestClientCert, as upstream: requests
// without a certificate still reach token and anonymous authentication.
//
// # Authorization
//
// authorization.mode AlwaysAllow allows every authenticated request;
// Webhook asks the API server with a SubjectAccessReview
// (authorization.k8s.io/v1), caching allowed answers for
// authorization.webhook.cacheAuthorizedTTL and the others for
// cacheUnauthorizedTTL. The attributes are upstream's (KubeletFineGrainedAuthz
// is GA): resource "nodes", name the node name, API version v1, the verb from
// the HTTP method (GET get, POST create, PUT update, PATCH patch, DELETE
// delete, any other method the empty verb) and the subresource from the path:
//
//	/stats/*                     stats
//	/metrics, /metrics/*         metrics
//	/logs/*                      log
//	/checkpoint/*                checkpoint
//	/statusz                     statusz
//	/flagz                       configz
//	/pods, /runningpods/, /allocatedPods   pods, then proxy
//	/healthz                     healthz, then proxy
//	/configz                     configz, then proxy
//	anything else                proxy
//
// A path matches a prefix when it equals it or continues it after a "/";
// the query string plays no part. Where two subresources are listed the
// request is allowed when either is (upstream's fallback to nodes/proxy for
// clients granted before the fine-grained subresources existed). A request
// none allows gets 403 with the body
//
//	Forbidden (user=NAME, verb=VERB, resource=nodes, subresource(s)=[pods proxy])
//
// and a SubjectAccessReview that fails gets 500 "Authorization error (user=…,
// verb=…, resource=nodes, subresource=…)", as upstream.
//
// # Use
//
//	f, err := auth.New(auth.Config{Authentication: c.Authentication,
//		Authorization: c.Authorization, Client: client, NodeName: node, Log: log})
//	srv := &http.Server{Handler: f.Wrap(mux), TLSConfig: f.TLSConfig(serving)}
//
// New fails, naming the field, when webhook authentication or authorization
// is configured without an API server client (standalone mode), when the
// client CA file cannot be read, when the authorization mode is empty or
// unknown, and when no authentication method is enabled at all. Handlers
// behind Wrap read the authenticated user with UserFrom.
package auth
