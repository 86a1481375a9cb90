package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkAPIPodStartup creates 60 pods through the API at once (spec.nodeName
// set) and reports the startup latency per pod, from the create call to Ready
// as a watch sees it, as p50/p99/max (make bench-cluster).
func BenchmarkAPIPodStartup(b *testing.B) {
	const count = 60
	for range b.N {
		b.StopTimer()
		n := newClusterNode(b)
		n.start()
		eventually(b, "node Ready", 30*time.Second, n.ready)
		ns := n.namespace("bench")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		w, err := n.admin.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
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
				if _, err := n.admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					b.Errorf("create %s: %v", p.Name, err)
					return
				}
				mu.Lock()
				created[p.Name] = at
				mu.Unlock()
			})
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted || !podReady(p) {
				continue
			}
			mu.Lock()
			if _, done := ready[p.Name]; !done {
				if at, ok := created[p.Name]; ok {
					ready[p.Name] = time.Since(at)
				} else {
					ready[p.Name] = time.Since(start)
				}
			}
			all := len(ready) == count
			mu.Unlock()
			if all {
				break
			}
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
		n.cleanup()
	}
}
