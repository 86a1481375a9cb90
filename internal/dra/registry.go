package dra

import (
	"maps"
	"slices"
	"sync"
)

// Driver is one registered DRA driver: the endpoint of its DRAPlugin
// service and the gRPC service chosen (v1.DRAPlugin or
// v1beta1.DRAPlugin), and its DRAResourceHealth service chosen, if it
// offers one.
type Driver struct {
	Name, Endpoint, Service string
	HealthService           string
}

// Registry is the node's registered DRA drivers, safe for concurrent use:
// the plugin-manager writes it, the dra-manager reads it. A driver
// registered from several sockets is used through the latest, as
// upstream's.
type Registry struct {
	mu      sync.RWMutex
	drivers map[string][]Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{drivers: map[string][]Driver{}} }

// Add registers d.
func (r *Registry) Add(d Driver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drivers[d.Name] = append(r.remove(d.Name, d.Endpoint), d)
}

// Remove forgets the driver name registered at endpoint, and tells whether
// no other endpoint of it is left.
func (r *Registry) Remove(name, endpoint string) (gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	left := r.remove(name, endpoint)
	if len(left) == 0 {
		delete(r.drivers, name)
		return true
	}
	r.drivers[name] = left
	return false
}

func (r *Registry) remove(name, endpoint string) []Driver {
	var left []Driver
	for _, d := range r.drivers[name] {
		if d.Endpoint != endpoint {
			left = append(left, d)
		}
	}
	return left
}

// Reset forgets every driver: a restarted plugin-manager registers again
// the plugins whose sockets it finds.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.drivers)
}

// Get returns the driver named name, or upstream's error when it is not
// registered.
func (r *Registry) Get(name string) (Driver, error) {
	if name == "" {
		return Driver{}, errEmptyName
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ds := r.drivers[name]
	if len(ds) == 0 {
		return Driver{}, &NotRegisteredError{Name: name}
	}
	return ds[len(ds)-1], nil
}

// List returns each registered driver, through its latest endpoint, by
// name.
func (r *Registry) List() []Driver {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Driver, 0, len(r.drivers))
	for _, name := range slices.Sorted(maps.Keys(r.drivers)) {
		ds := r.drivers[name]
		out = append(out, ds[len(ds)-1])
	}
	return out
}

// NotRegisteredError: no plugin of the driver is registered.
type NotRegisteredError struct{ Name string }

func (e *NotRegisteredError) Error() string {
	return "DRA driver " + e.Name + " is not registered"
}
