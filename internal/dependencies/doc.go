// Package dependencies builds the node agent's connections to the outside
// world once, at start-up, for the runtime actors to share: the container
// runtime and image service (CRI over gRPC), the API server client (absent in
// standalone mode), the event recorder, the node's identity and its root
// directory. Upstream calls this set the kubelet's Dependencies.
package dependencies
