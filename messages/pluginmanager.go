package messages

import "fmt"

// PluginSocketAdded says a socket appeared under plugins_registry (or was
// there when the watch started): a plugin asks to be registered.
// Sender: the plugin watcher (internal/plugins, outside the tree).
// Receiver: the plugin-manager.
type PluginSocketAdded struct{ Path string }

func (m *PluginSocketAdded) Summary() string { return "socket added: " + m.Path }

// PluginSocketRemoved says a path under plugins_registry went: the plugin
// whose socket it was, if any, is de-registered.
// Sender: the plugin watcher (outside the tree). Receiver: the
// plugin-manager.
type PluginSocketRemoved struct{ Path string }

func (m *PluginSocketRemoved) Summary() string { return "socket removed: " + m.Path }

// PluginInfo is what a plugin said of itself in the registration
// handshake (GetInfo).
type PluginInfo struct {
	Type, Name, Endpoint string
	Versions             []string
}

// PluginInfoGot is the outcome of the handshake's GetInfo with the socket
// at Path, seen as its generation Gen.
// Sender and receiver: the plugin-manager (from its own goroutine).
type PluginInfoGot struct {
	Path string
	Gen  uint64
	Info PluginInfo
	Err  error
}

func (m *PluginInfoGot) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s #%d: GetInfo failed: %v", m.Path, m.Gen, m.Err)
	}
	return fmt.Sprintf("%s #%d: %s %s", m.Path, m.Gen, m.Info.Type, m.Info.Name)
}

// PluginRegistered is the outcome of registering the plugin at Path: for
// a CSI driver, its NodeGetInfo, its node info in the API and the
// success notified to the plugin. On failure the plugin was told why and
// what was written is undone.
// Sender and receiver: the plugin-manager (from its own goroutine).
type PluginRegistered struct {
	Path   string
	Gen    uint64
	NodeID string
	Err    error
}

func (m *PluginRegistered) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s #%d: registration failed: %v", m.Path, m.Gen, m.Err)
	}
	return fmt.Sprintf("%s #%d: registered, node ID %s", m.Path, m.Gen, m.NodeID)
}

// PluginRefused says the plugin at Path was told it is refused (Reason),
// or that telling it failed (Err).
// Sender and receiver: the plugin-manager (from its own goroutine).
type PluginRefused struct {
	Path   string
	Gen    uint64
	Reason string
	Err    error
}

func (m *PluginRefused) Summary() string {
	return fmt.Sprintf("%s #%d: refused: %s", m.Path, m.Gen, m.Reason)
}

// PluginDeregistered says the plugin registered from Path is
// de-registered: its driver's node info is gone from the API, unless Err.
// Sender and receiver: the plugin-manager (from its own goroutine).
type PluginDeregistered struct {
	Path string
	Gen  uint64
	Err  error
}

func (m *PluginDeregistered) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s #%d: de-registered; removing its node info failed: %v", m.Path, m.Gen, m.Err)
	}
	return fmt.Sprintf("%s #%d: de-registered", m.Path, m.Gen)
}

// PluginRetryDue wakes the plugin-manager to try the socket at Path, of
// generation Gen, again after a failed registration.
// Sender and receiver: the plugin-manager (its timer).
type PluginRetryDue struct {
	Path string
	Gen  uint64
}

func (m *PluginRetryDue) Summary() string { return fmt.Sprintf("%s #%d: retry due", m.Path, m.Gen) }

// CSINodeInitialized is the outcome of making the node's CSINode at
// start-up.
// Sender and receiver: the plugin-manager (from its own goroutine).
type CSINodeInitialized struct{ Err error }

func (m *CSINodeInitialized) Summary() string {
	if m.Err != nil {
		return "CSINode initialization failed: " + m.Err.Error()
	}
	return "CSINode initialized"
}

// CSINodeInitDue wakes the plugin-manager to make the CSINode again.
// Sender and receiver: the plugin-manager (its timer).
type CSINodeInitDue struct{}

func (m *CSINodeInitDue) Summary() string { return "CSINode initialization due" }

// StorageStateRequest asks whether storage keeps the node from being
// Ready: upstream's storage error of the runtime state.
// Sender: the status-reporter, each node status update, with a timeout.
// Receiver: the plugin-manager, which answers StorageState.
type StorageStateRequest struct{}

func (m *StorageStateRequest) Summary() string { return "storage state?" }

// StorageState answers a StorageStateRequest: Err is why the node is not
// Ready for storage (its CSINode not made yet), empty when nothing is.
type StorageState struct{ Err string }

func (m *StorageState) Summary() string {
	if m.Err == "" {
		return "storage ready"
	}
	return "storage not ready: " + m.Err
}
