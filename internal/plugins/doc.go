// Package plugins holds the mechanics of kubelet plugin registration that
// the plugin-manager drives, as upstream's pluginmanager: the watcher of
// the plugins_registry directory, which reports the sockets that appear
// and go there, and the client side of the registration handshake
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1: GetInfo, then
// NotifyRegistrationStatus). actorlet serves nothing there: each plugin
// serves its socket and actorlet dials it.
package plugins
