package csi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// summaryVolumes are the pod's volumes in the node's /stats/summary, read
// through the API server's node proxy, by name.
func (n *csiNode) summaryVolumes(uid types.UID) (map[string]statsapi.VolumeStats, error) {
	raw, err := n.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "stats/summary").DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	var sum statsapi.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		return nil, err
	}
	for _, ps := range sum.Pods {
		if ps.PodRef.UID != string(uid) {
			continue
		}
		out := map[string]statsapi.VolumeStats{}
		for _, v := range ps.VolumeStats {
			out[v.Name] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("no stats of pod %s", uid)
}

// figure is *p, or 0 for none.
func figure(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// volumeStatsHelp are upstream's help texts of the volume stats metrics,
// with their stability level.
var volumeStatsHelp = map[string]string{
	"kubelet_volume_stats_capacity_bytes":  "[ALPHA] Capacity in bytes of the volume",
	"kubelet_volume_stats_available_bytes": "[ALPHA] Number of available bytes in the volume",
	"kubelet_volume_stats_used_bytes":      "[ALPHA] Number of used bytes in the volume",
	"kubelet_volume_stats_inodes":          "[ALPHA] Maximum number of inodes in the volume",
	"kubelet_volume_stats_inodes_free":     "[ALPHA] Number of free inodes in the volume",
	"kubelet_volume_stats_inodes_used":     "[ALPHA] Number of used inodes in the volume",
}

// volumeStatsMetrics are the claim's kubelet_volume_stats_* gauges on the
// node's /metrics, read through the API server's node proxy, by name; an
// error unless each has upstream's help text, type and one series.
func (n *csiNode) volumeStatsMetrics(namespace, claim string) (map[string]float64, error) {
	raw, err := n.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "metrics").DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("/metrics does not parse: %w", err)
	}
	out := map[string]float64{}
	for name, help := range volumeStatsHelp {
		f := families[name]
		if f == nil {
			return nil, fmt.Errorf("no %s", name)
		}
		if f.GetHelp() != help || f.GetType() != dto.MetricType_GAUGE {
			return nil, fmt.Errorf("%s: %v %q, want a gauge with help %q", name, f.GetType(), f.GetHelp(), help)
		}
		var found []*dto.Metric
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) == 2 && labels["namespace"] == namespace && labels["persistentvolumeclaim"] == claim {
				found = append(found, m)
			}
		}
		if len(found) != 1 {
			return nil, fmt.Errorf("%s{namespace=%q,persistentvolumeclaim=%q}: %d series, want 1", name, namespace, claim, len(found))
		}
		out[name] = found[0].GetGauge().GetValue()
	}
	return out, nil
}
