package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
)

// Sources of ResourceHealthChanged: each replaces only its own entries.
const (
	HealthFromDRA     = "dra"
	HealthFromDevices = "devices"
)

// ResourceHealthChanged is the health of the devices a pod's containers
// were given, as the containers' allocatedResourcesStatus shows it (the
// ResourceHealthStatus gate): Containers are each container's entries
// from Source, whole (a container left out has none of it).
// Senders: the dra-manager and the device-manager, when what they would
// show for the pod changed. Receiver: the pod-manager, which hands it on
// to the pod's worker; the worker writes it into each status it reports
// and reports again.
type ResourceHealthChanged struct {
	UID        types.UID
	Source     string
	Containers map[string][]v1.ResourceStatus
}

func (m *ResourceHealthChanged) Summary() string {
	return fmt.Sprintf("%s: %s health of %d containers", m.UID, m.Source, len(m.Containers))
}

// DRADriversChanged says the registry of DRA drivers changed: the
// dra-manager starts or stops their health streams.
// Sender: the plugin-manager. Receiver: the dra-manager.
type DRADriversChanged struct{}

func (m *DRADriversChanged) Summary() string { return "DRA drivers changed" }

// DRAHealthReport, DRAHealthStreamEnded and DRAHealthDue are the
// dra-manager's own: a report of a driver's health stream (Gen: the
// stream's), the stream's end, and the timer that shows health past its
// timeout as Unknown or starts a stream again.
// Sender and receiver: the dra-manager (its stream goroutines, its timer).
type (
	DRAHealthReport struct {
		Driver  string
		Gen     int
		Devices []*drahealthv1.DeviceHealth
	}
	DRAHealthStreamEnded struct {
		Driver string
		Gen    int
		Err    error
	}
	DRAHealthDue struct{}
)

func (m *DRAHealthReport) Summary() string {
	return fmt.Sprintf("%s: health of %d devices", m.Driver, len(m.Devices))
}
func (m *DRAHealthStreamEnded) Summary() string {
	return fmt.Sprintf("%s: health stream ended: %v", m.Driver, m.Err)
}
func (m *DRAHealthDue) Summary() string { return "DRA health due" }
