package cluster

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkAPIPodStartup creates 60 pods through the API at once (spec.nodeName
// set) and reports the startup latency per pod, from the create call to Ready
// as the API shows it, as p50/p99/max (make bench-cluster).
func BenchmarkAPIPodStartup(b *testing.B) {
	const count = 60
	for range b.N {
		b.StopTimer()
		n := newClusterNode(b)
		n.Start()
		eventually(b, "node Ready", 30*time.Second, n.Ready)
		ns := n.Namespace("bench")
		// client-go's default 5 QPS would make the creates, not the node,
		// the bottleneck.
		cfg := n.Env.AdminRESTConfig(b)
		cfg.QPS, cfg.Burst = 1000, 1000
		admin, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var mu sync.Mutex
		created := map[string]time.Time{}
		ready := map[string]time.Duration{}
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for i := range count {
			wg.Go(func() {
				p := n.apiPod(ns, fmt.Sprintf("p%02d", i), "sleep 3600", 1, v1.RestartPolicyAlways)
				p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
				at := time.Now()
				if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					b.Errorf("create %s: %v", p.Name, err)
					return
				}
				mu.Lock()
				created[p.Name] = at
				mu.Unlock()
			})
		}
		// Polling the list every 50 ms stands in for an informer: the
		// latency it adds is at most one period.
		for len(ready) < count && ctx.Err() == nil {
			list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			mu.Lock()
			for i := range list.Items {
				p := &list.Items[i]
				if _, done := ready[p.Name]; done || !agent.PodReady(p) {
					continue
				}
				if at, ok := created[p.Name]; ok {
					ready[p.Name] = now.Sub(at)
				}
			}
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
		wg.Wait()
		allReady := time.Since(start)
		b.StopTimer()
		cancel()
		if len(ready) != count {
			b.Fatalf("only %d of %d pods Ready", len(ready), count)
		}
		lat := make([]time.Duration, 0, count)
		for _, d := range ready {
			lat = append(lat, d)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) float64 { return lat[int(p*float64(count-1))].Seconds() }
		b.ReportMetric(pct(0.5), "p50-s")
		b.ReportMetric(pct(0.99), "p99-s")
		b.ReportMetric(lat[count-1].Seconds(), "max-s")
		b.ReportMetric(allReady.Seconds(), "all-ready-s")
		if os.Getenv("ACTORLET_BENCH_LOG") != "" {
			// For profiling a run: the agent's log, with its timings.
			b.Log(n.Logs())
		}
		n.Cleanup()
	}
}
