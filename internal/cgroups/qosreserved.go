package cgroups

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ParseQOSReserved is upstream's ParseQOSReserved of qosReserved: only
// memory, as a percentage from 0% to 100%. Its errors are upstream's.
func ParseQOSReserved(m map[string]string) (map[v1.ResourceName]int64, error) {
	out := map[v1.ResourceName]int64{}
	for k, v := range m {
		if v1.ResourceName(k) != v1.ResourceMemory {
			return nil, fmt.Errorf("cannot reserve %q resource", k)
		}
		p, err := parsePercentage(v)
		if err != nil {
			return nil, fmt.Errorf("failed to parse percentage %q for %q resource: %w", v, k, err)
		}
		out[v1.ResourceMemory] = p
	}
	return out, nil
}

func parsePercentage(v string) (int64, error) {
	if !strings.HasSuffix(v, "%") {
		return 0, fmt.Errorf("percentage expected, got '%s'", v)
	}
	p, err := strconv.ParseInt(strings.TrimRight(v, "%"), 10, 0)
	if err != nil {
		return 0, fmt.Errorf("invalid number in percentage '%s'", v)
	}
	if p < 0 || p > 100 {
		return 0, fmt.Errorf("percentage must be between 0 and 100")
	}
	return p, nil
}

// QoSMemoryLimits is upstream's setMemoryReserve (qosReserved under the
// QOSReserved gate): the burstable cgroup may use allocatable memory less
// percent of the Guaranteed pods' memory requests, the besteffort cgroup
// that less percent of the Burstable pods' requests, so that the pods of a
// better class keep their memory. allocatable is node allocatable's memory
// (capacity less the reservations); 0 sets no limit (ok false).
func QoSMemoryLimits(pods []*v1.Pod, percent, allocatable int64) (burstable, bestEffort int64, ok bool) {
	if allocatable <= 0 {
		return 0, 0, false
	}
	requests := map[v1.PodQOSClass]int64{}
	for _, pod := range pods {
		qos := QOSClass(pod)
		if qos == v1.PodQOSBestEffort {
			continue
		}
		if q, found := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceMemory]; found {
			requests[qos] += q.Value()
		}
	}
	burstable = allocatable - requests[v1.PodQOSGuaranteed]*percent/100
	bestEffort = burstable - requests[v1.PodQOSBurstable]*percent/100
	return burstable, bestEffort, true
}

// RaisedToUsage is the QoS cgroup memory limit to retry with after the
// kernel refused limit: the usage when it is over the limit, else the
// limit, as upstream's retrySetMemoryReserve.
func RaisedToUsage(limit, usage int64) int64 {
	if usage > limit {
		return usage
	}
	return limit
}
