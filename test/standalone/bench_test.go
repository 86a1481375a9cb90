package standalone

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkStaticPods places 30 static pod manifests at once and reports the
// time until /pods shows all of them Running (make bench-static).
func BenchmarkStaticPods(b *testing.B) {
	const count = 30
	for range b.N {
		b.StopTimer()
		n := newNode(b)
		n.Start()
		b.StartTimer()
		start := time.Now()
		for i := range count {
			n.WriteManifest(fmt.Sprintf("p%02d.yaml", i), manifest(fmt.Sprintf("p%02d", i),
				fmt.Sprintf("  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
		}
		for {
			pods, err := n.Pods()
			running := 0
			for _, p := range pods {
				if p.Status.Phase == v1.PodRunning {
					running++
				}
			}
			if err == nil && running == count {
				break
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("only %d of %d pods running after 5 minutes", running, count)
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-all-running")
		b.StopTimer()
		n.Cleanup()
	}
}
