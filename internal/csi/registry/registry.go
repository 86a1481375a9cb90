// Package registry holds the CSI drivers registered on this node: each
// driver's name, the endpoint of its Node service and the CSI versions it
// supports, as upstream's csiDrivers store (pkg/volume/csi). The
// plugin-manager writes it when a driver's registration completes and when
// its socket goes; whatever mounts CSI volumes reads it to find a driver's
// endpoint by name.
package registry

import (
	"cmp"
	"slices"
	"sync"
)

// Driver is one registered CSI driver.
type Driver struct {
	// Name is the driver's name, as CSIDriver objects and volumes name it.
	Name string
	// Endpoint is the Unix socket of the driver's CSI services.
	Endpoint string
	// Versions are the CSI versions the plugin said it supports.
	Versions []string
	// HighestVersion is the highest of Versions that actorlet speaks (1.x).
	HighestVersion string
}

// Reader is what the users of CSI drivers read.
type Reader interface {
	// Driver returns the registered driver named name.
	Driver(name string) (Driver, bool)
	// Drivers returns every registered driver, sorted by name.
	Drivers() []Driver
}

// Registry is the node's registered CSI drivers, safe for concurrent use:
// one actor writes it, others read it.
type Registry struct {
	mu      sync.RWMutex
	drivers map[string]Driver
}

var _ Reader = (*Registry)(nil)

// New returns an empty registry.
func New() *Registry { return &Registry{drivers: map[string]Driver{}} }

// Set registers d, replacing a driver of the same name.
func (r *Registry) Set(d Driver) {
	d.Versions = slices.Clone(d.Versions)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drivers[d.Name] = d
}

// Delete forgets the driver named name.
func (r *Registry) Delete(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.drivers, name)
}

// Reset forgets every driver: a restarted plugin-manager registers again
// the plugins whose sockets it finds.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.drivers)
}

// Driver implements Reader.
func (r *Registry) Driver(name string) (Driver, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.drivers[name]
	d.Versions = slices.Clone(d.Versions)
	return d, ok
}

// Drivers implements Reader.
func (r *Registry) Drivers() []Driver {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Driver, 0, len(r.drivers))
	for _, d := range r.drivers {
		d.Versions = slices.Clone(d.Versions)
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Driver) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
