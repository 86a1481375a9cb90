// Package csi holds the mechanics of CSI drivers on the node that the
// plugin-manager drives: the calls to a driver's CSI services
// (NodeGetInfo), and what a registered driver changes in the API, as
// upstream's nodeinfomanager: the CSINode object of this node, the Node's
// csi.volume.kubernetes.io/nodeid annotation and its topology labels. The
// drivers registered so far are in the registry subpackage.
package csi
