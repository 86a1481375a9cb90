// Package dra holds the mechanics of Dynamic Resource Allocation on the
// node, as upstream's DRA manager (pkg/kubelet/cm/dra) has them: the
// registry of DRA drivers registered through the plugin watcher, the
// client of a driver's DRAPlugin service (NodePrepareResources and
// NodeUnprepareResources, in gRPC service v1 or v1beta1), the claim info
// state and its checkpoint <root-dir>/dra_manager_state in upstream's
// format, and the pure reading of a pod's claims (which claim a pod
// claim names, which drivers an allocation needs, which CDI devices a
// container gets), and device health: the client of a driver's
// DRAResourceHealth stream, the health cache and the containers'
// allocatedResourcesStatus made from it. The dra-manager actor owns the
// state and decides.
package dra
