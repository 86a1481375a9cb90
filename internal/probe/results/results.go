// Package results holds what probes found, as the pod-worker keeps it and
// the runtime's decisions read it: one Result per probe kind per container
// instance. It has no dependencies, so that podruntime (which decides on
// results) and the prober (which produces them) share it without importing
// each other.
package results

// Result is one probe kind's verdict for one container instance, as
// upstream's prober results: Unknown until the probe has decided.
type Result int8

const (
	// Unknown: not probed yet, or the probe is held back (a startup probe
	// that has not succeeded holds liveness and readiness).
	Unknown Result = iota
	// Success: the probe passed successThreshold times in a row.
	Success
	// Failure: the probe failed failureThreshold times in a row.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Kind is a probe's kind.
type Kind int8

const (
	Liveness Kind = iota
	Readiness
	Startup
)

// String is the kind as upstream's metrics and events name it.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Container is the results of one container instance's probes. A kind the
// container has no probe of stays Unknown; readers check the spec.
type Container struct {
	Liveness, Readiness, Startup Result
}

// Get returns the result of kind k.
func (c Container) Get(k Kind) Result {
	switch k {
	case Liveness:
		return c.Liveness
	case Readiness:
		return c.Readiness
	}
	return c.Startup
}

// Set returns c with kind k's result r.
func (c Container) Set(k Kind, r Result) Container {
	switch k {
	case Liveness:
		c.Liveness = r
	case Readiness:
		c.Readiness = r
	default:
		c.Startup = r
	}
	return c
}

// Pod is the results of a pod's container instances, by runtime container
// ID (without the "containerd://" prefix): a new instance starts with no
// results. A nil Pod has none.
type Pod map[string]Container

// Of returns the results of container instance id.
func (p Pod) Of(id string) Container { return p[id] }
