package stats

import (
	"context"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSandboxPIDsForgotten scrapes a node whose pod web (sandbox sb-a)
// then goes from the runtime, and checks that the provider keeps neither
// the sandbox's pid nor its image: read through the summary or
// /metrics/cadvisor, with its process alive or gone when first scraped.
func TestSandboxPIDsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name     string
		goneProc bool // sb-a's pid has no process: the read of its network fails
		cadvisor bool // scrape /metrics/cadvisor rather than the summary
	}{
		{name: "summary, process alive"},
		{name: "summary, process gone", goneProc: true},
		{name: "cadvisor, process alive", cadvisor: true},
		{name: "cadvisor, process gone", goneProc: true, cadvisor: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t)
			if tc.goneProc {
				n.cri.pids = map[string]int{"sb-a": 999999} // no such process in the fixture
			}
			scrapeOnce := func() {
				t.Helper()
				if tc.cadvisor {
					scrape(t, n.p.CadvisorMetricsHandler())
					return
				}
				if _, err := n.p.Summary(context.Background(), false); err != nil {
					t.Fatal(err)
				}
			}
			scrapeOnce()
			if _, ok := n.p.sandboxImages["sb-a"]; !ok && tc.cadvisor && !tc.goneProc {
				t.Fatalf("sb-a's image not kept after the first scrape: %v", n.p.sandboxImages)
			}
			// web goes: its sandbox and containers leave the runtime.
			n.cri.sandboxes = slices.DeleteFunc(n.cri.sandboxes, func(s *runtimeapi.PodSandbox) bool { return s.Id == "sb-a" })
			n.cri.containers = slices.DeleteFunc(n.cri.containers, func(c *runtimeapi.Container) bool { return c.PodSandboxId == "sb-a" })
			scrapeOnce()
			n.p.pidsMu.Lock()
			defer n.p.pidsMu.Unlock()
			if pid, ok := n.p.sandboxPIDs["sb-a"]; ok {
				t.Errorf("sb-a's pid %d kept after it left the runtime", pid)
			}
			if img, ok := n.p.sandboxImages["sb-a"]; ok {
				t.Errorf("sb-a's image %q kept after it left the runtime", img)
			}
		})
	}
}
