package csi

import (
	"context"
	"encoding/json"
	"fmt"

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
