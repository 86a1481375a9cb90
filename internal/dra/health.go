package dra

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// DefaultHealthTimeout is upstream's: a device whose driver said nothing
// of it for that long, and gave no timeout of its own, is Unknown.
const DefaultHealthTimeout = 30 * time.Second

// maxDevicesPerDriver is upstream's bound on the devices of one driver the
// cache keeps: reports are not checked against ResourceSlices, so a driver
// naming ever new devices must not grow it without end.
const maxDevicesPerDriver = 16384

// HealthServices are the DRAResourceHealth gRPC services actorlet speaks,
// most recent first, as upstream's: the health stream of a driver uses the
// first it lists in its supported versions.
var HealthServices = []string{drahealthv1.DRAResourceHealthService, drahealthv1alpha1.DRAResourceHealthService}

// ChooseHealthService is the health service of a driver that listed
// supported, "" when it offers none (the service is optional).
func ChooseHealthService(supported []string) string {
	for _, s := range HealthServices {
		if slices.Contains(supported, s) {
			return s
		}
	}
	return ""
}

// DeviceHealth is what a driver last said of one of its devices.
type DeviceHealth struct {
	PoolName, DeviceName string
	Health               v1.ResourceHealthStatus
	Message              string
	LastUpdated          time.Time
	Timeout              time.Duration
}

// DeviceHealthFromProto is one device of a driver's report, as upstream's
// buildDeviceHealth: its timeout, else the default; its message truncated
// to the API's bound.
func DeviceHealthFromProto(d *drahealthv1.DeviceHealth) DeviceHealth {
	timeout := DefaultHealthTimeout
	if s := d.GetHealthCheckTimeoutSeconds(); s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	health := v1.ResourceHealthStatusUnknown
	switch d.GetHealth() {
	case drahealthv1.HealthStatus_HEALTHY:
		health = v1.ResourceHealthStatusHealthy
	case drahealthv1.HealthStatus_UNHEALTHY:
		health = v1.ResourceHealthStatusUnhealthy
	}
	msg := d.GetMessage()
	if len(msg) > v1.ResourceHealthMessageMaxLength {
		msg = msg[:v1.ResourceHealthMessageMaxLength-3] + "..."
	}
	return DeviceHealth{PoolName: d.GetDevice().GetPoolName(), DeviceName: d.GetDevice().GetDeviceName(),
		Health: health, Message: msg, Timeout: timeout}
}

func (d DeviceHealth) key() string { return d.PoolName + "/" + d.DeviceName }

// Health is the health info cache: what each driver said of each of its
// devices, by driver then pool/device, as upstream's healthInfoCache.
// Not safe for concurrent use: the dra-manager alone owns it.
type Health map[string]map[string]DeviceHealth

// Update merges a driver's report received at now, as upstream's
// updateHealthInfo: a device reported is recorded (a new one beyond the
// bound ignored); one not reported past its timeout goes, and changes to
// Unknown unless it was. Changed are the devices whose health, message or
// timeout changed, by pool/device.
func (h Health) Update(driver string, reported []DeviceHealth, now time.Time) (changed []string) {
	devices := h[driver]
	if devices == nil {
		devices = map[string]DeviceHealth{}
		h[driver] = devices
	}
	seen := map[string]bool{}
	for _, d := range reported {
		d.LastUpdated = now
		k := d.key()
		seen[k] = true
		old, ok := devices[k]
		if !ok && len(devices) >= maxDevicesPerDriver {
			continue
		}
		if !ok || old.Health != d.Health || old.Message != d.Message || old.Timeout != d.Timeout {
			changed = append(changed, k)
		}
		devices[k] = d
	}
	for k, d := range devices {
		if seen[k] || now.Sub(d.LastUpdated) <= d.timeout() {
			continue
		}
		if d.Health != v1.ResourceHealthStatusUnknown {
			changed = append(changed, k)
		}
		delete(devices, k)
	}
	slices.Sort(changed)
	return changed
}

// ClearDriver forgets a driver's devices: its stream ended.
func (h Health) ClearDriver(driver string) { delete(h, driver) }

func (d DeviceHealth) timeout() time.Duration {
	if d.Timeout == 0 {
		return DefaultHealthTimeout
	}
	return d.Timeout
}

// Get is a device's health at now: Unknown, without a message, when its
// driver never said or said too long ago, as upstream's getHealthInfo.
func (h Health) Get(driver, pool, device string, now time.Time) DeviceHealth {
	d, ok := h[driver][pool+"/"+device]
	if !ok || now.Sub(d.LastUpdated) > d.timeout() {
		return DeviceHealth{PoolName: pool, DeviceName: device, Health: v1.ResourceHealthStatusUnknown}
	}
	return d
}

// NextExpiry is the first moment after now a device's health times out,
// zero when none will: the statuses read then change to Unknown.
func (h Health) NextExpiry(now time.Time) time.Time {
	var next time.Time
	for _, devices := range h {
		for _, d := range devices {
			at := d.LastUpdated.Add(d.timeout())
			if at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	return next
}

// ContainerResourceStatus is each container's allocatedResourcesStatus of
// the pod's ResourceClaims, as upstream's UpdateAllocatedResourcesStatus of
// its DRA manager: one entry per claim (and request) a container's
// resources.claims names, `claim:<claim>` or `claim:<claim>/<request>`,
// with each device prepared for it, named by its first CDI device ID
// (else driver/pool/device), and its health at now. claimInfo reads a
// prepared claim of the cache by name; a claim not there is left out, as
// a container without entries. The message is given only withMessage
// (the ResourceHealthStatusMessage gate).
func ContainerResourceStatus(pod *v1.Pod, claimInfo func(name string) (ClaimInfoState, bool), h Health, now time.Time, withMessage bool) map[string][]v1.ResourceStatus {
	out := map[string][]v1.ResourceStatus{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var statuses []v1.ResourceStatus
		for _, ref := range c.Resources.Claims {
			name := claimName(pod, ref.Name)
			if name == "" {
				continue
			}
			info, ok := claimInfo(name)
			if !ok {
				continue
			}
			rs := v1.ResourceStatus{Name: v1.ResourceName("claim:" + ref.Name)}
			if ref.Request != "" {
				rs.Name = v1.ResourceName(fmt.Sprintf("claim:%s/%s", ref.Name, ref.Request))
			}
			seen := map[v1.ResourceID]bool{}
			for _, driver := range slices.Sorted(maps.Keys(info.DriverState)) {
				for _, dev := range info.DriverState[driver].Devices {
					if ref.Request != "" && len(dev.RequestNames) > 0 && !slices.Contains(dev.RequestNames, baseRequest(ref.Request)) {
						continue
					}
					rh := resourceHealth(driver, dev, h.Get(driver, dev.PoolName, dev.DeviceName, now), withMessage)
					if seen[rh.ResourceID] {
						continue
					}
					seen[rh.ResourceID] = true
					rs.Resources = append(rs.Resources, rh)
				}
			}
			if len(rs.Resources) > 0 {
				statuses = append(statuses, rs)
			}
		}
		if len(statuses) > 0 {
			slices.SortFunc(statuses, func(a, b v1.ResourceStatus) int { return cmp.Compare(a.Name, b.Name) })
			out[c.Name] = statuses
		}
	}
	return out
}

// claimName is the ResourceClaim a pod's claim entry stands for: its
// status's generated name first, else the name its spec gives (a claim's
// status may not be written yet when health is first reported).
func claimName(pod *v1.Pod, podClaim string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == podClaim && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	for i := range pod.Spec.ResourceClaims {
		if pod.Spec.ResourceClaims[i].Name != podClaim {
			continue
		}
		if name, _, err := ClaimName(pod, &pod.Spec.ResourceClaims[i]); err == nil && name != nil {
			return *name
		}
		break
	}
	return ""
}

// baseRequest strips a subrequest: devices record their requests without.
func baseRequest(request string) string {
	for i := range request {
		if request[i] == '/' {
			return request[:i]
		}
	}
	return request
}

func resourceHealth(driver string, dev Device, health DeviceHealth, withMessage bool) v1.ResourceHealth {
	rh := v1.ResourceHealth{Health: health.Health}
	if withMessage && health.Message != "" {
		msg := health.Message
		rh.Message = &msg
	}
	if len(dev.CDIDeviceIDs) > 0 {
		rh.ResourceID = v1.ResourceID(dev.CDIDeviceIDs[0])
	} else {
		rh.ResourceID = v1.ResourceID(fmt.Sprintf("%s/%s/%s", driver, dev.PoolName, dev.DeviceName))
	}
	return rh
}
