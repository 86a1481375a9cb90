// Package deviceplugin holds the mechanics of device plugins
// (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) that the device-manager
// actor drives, as upstream's pkg/kubelet/cm/devicemanager/plugin: the
// registration server on <root-dir>/device-plugins/kubelet.sock, which
// checks a plugin's version and resource name and dials its socket, and
// the client of one plugin (its options, the ListAndWatch stream,
// GetPreferredAllocation, Allocate, PreStartContainer). Decisions (which
// devices a container gets, when a plugin's resource goes) are the
// actor's; the checkpoint of allocations is package checkpoint.
package deviceplugin
