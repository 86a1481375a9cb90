package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/kubeletapi"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
	"github.com/actorlet/actorlet/test/agent"
)

// spawnChild asks a treeActor to spawn a child of a kind under a name.
type spawnChild struct{ kind, name string }

func (m *spawnChild) Summary() string { return "spawn " + m.kind + " " + m.name }

// treeActor stands in for every actor of the tree: it only spawns children.
type treeActor struct{ reg *supervision.Registry }

func (a *treeActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnChild); ok {
		if _, err := ctx.SpawnNamed(a.reg.Props(m.kind, a.producer(), nil), m.name); err != nil {
			panic(err)
		}
	}
}

func (a *treeActor) producer() actor.Producer {
	return func() actor.Actor { return &treeActor{reg: a.reg} }
}

// manyWorkers is the scale: a node with 110 pods.
const manyWorkers = 110

// namespaces of the workers, in turn: the filter test picks one.
var namespaces = []string{"default", "kube-system", "monitoring", "team-a"}

// TestDashboardManyWorkers draws a tree of actorlet's shape with 110
// pod-workers, served in-process from the dashboard's own handlers: the
// workers collapse into one node, the filter picks them by namespace, and
// expanded they stay readable.
func TestDashboardManyWorkers(t *testing.T) {
	system, workers := manyWorkerTree(t)
	mux := http.NewServeMux()
	kubeletapi.RegisterDashboard(mux, system.Registry)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	stop := sendTraffic(system, workers)
	t.Cleanup(stop)
	// Started last, so closed first: Close waits for the page's event stream.
	b := newBrowser(t)

	b.open(srv.URL+"/debug/actors", `#graph g.node[data-kind="pod-workers"]`, 30*time.Second)
	checkGraph(t, b)
	if got := eval[int](b, `document.querySelectorAll("#graph g.node[data-kind='pod-worker']").length`); got != 0 {
		t.Errorf("%d worker nodes drawn while collapsed, want 0", got)
	}
	group := eval[string](b, `document.querySelector("#graph g.node[data-kind='pod-workers'] text.title").textContent`)
	if want := fmt.Sprintf("pod-workers (%d)", manyWorkers); !strings.Contains(group, want) {
		t.Errorf("collapsed workers node says %q, want %q", group, want)
	}
	total := manyWorkers + len(runtimeKinds)
	if got := eval[int](b, `document.querySelectorAll("#actors tbody tr").length`); got != total {
		t.Errorf("actor table has %d rows, want %d", got, total)
	}

	// The filter narrows the graph and the table to one namespace's workers.
	inNamespace := manyWorkers / len(namespaces) // team-a is the last namespace, so it has no extra worker
	b.do("type a filter", 10*time.Second, chromedp.SendKeys(chromedp.CSS("#filter"), "team-a/"))
	poll[bool](b, "the filtered workers", fmt.Sprintf(`document.querySelectorAll("#graph g.node[data-kind='pod-worker']").length === %d &&
		document.querySelectorAll("#actors tbody tr").length === %d`, inNamespace, inNamespace), 5*time.Second)
	checkGraph(t, b)

	eval[bool](b, `(() => { const f = document.getElementById("filter"); f.value = ""; return f.dispatchEvent(new Event("input")); })()`)
	b.click("show pod-workers", `document.getElementById("expand")`)
	poll[bool](b, "every worker drawn", fmt.Sprintf(`document.querySelectorAll("#graph g.node[data-kind='pod-worker']").length === %d`, manyWorkers), 5*time.Second)
	checkGraph(t, b)
	// The page redraws on every snapshot, twice a second: log what one
	// redraw of everything costs at this scale.
	ms := eval[float64](b, `(() => { const t0 = performance.now(); render(); return performance.now() - t0; })()`)
	t.Logf("one redraw with %d workers expanded: %.1f ms", manyWorkers, ms)
	b.screenshot("dashboard-110-workers.png")
	b.checkNoPageErrors()
}

// manyWorkerTree spawns bootstrap, the runtime actors and manyWorkers
// pod-workers under the pod-manager, and returns the workers' paths.
func manyWorkerTree(t *testing.T) (*supervision.System, []string) {
	t.Helper()
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	reg := system.Registry
	root := &treeActor{reg: reg}
	if _, err := system.Root.SpawnNamed(reg.Props("bootstrap", root.producer(), nil), "bootstrap"); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, reg, "bootstrap")
	for _, k := range runtimeKinds[1:] {
		supervision.TellFromOutside(system.ActorSystem, pid(system, "bootstrap"), &spawnChild{kind: k, name: k})
		waitRegistered(t, reg, "bootstrap/"+k)
	}
	reg.RecordStep(supervision.Step{Name: "load configuration", Started: time.Now(), Duration: 3 * time.Millisecond})
	var workers []string
	for i := range manyWorkers {
		name := fmt.Sprintf("%s/app-%03d-node1@%08x", namespaces[i%len(namespaces)], i, 0x1f0c0000+i)
		supervision.TellFromOutside(system.ActorSystem, pid(system, "bootstrap/pod-manager"), &spawnChild{kind: "pod-worker", name: name})
		workers = append(workers, "bootstrap/pod-manager/"+name)
	}
	for i, w := range workers {
		waitRegistered(t, reg, w)
		reg.SetState(w, []string{"syncing", "syncing", "syncing", "terminating", "terminated"}[i%5])
	}
	return system, workers
}

// sendTraffic sends messages of actorlet's real types along its real flows,
// from the actors that send them, until the returned stop is called.
func sendTraffic(system *supervision.System, workers []string) (stop func()) {
	done := make(chan struct{})
	pod := &v1.Pod{}
	pod.Namespace, pod.Name = "default", "web"
	send := func(from, to string, m messages.Message) {
		system.Root.RequestWithCustomSender(pid(system, to), m, pid(system, from))
	}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			send("bootstrap/config-source", "bootstrap/pod-manager", &messages.PodUpdate{Source: "file"})
			send("bootstrap/pleg", "bootstrap/pod-manager", &messages.PodLifecycleEvents{})
			send("bootstrap/pleg", "bootstrap/pleg", &messages.Relisted{})
			send("bootstrap/pod-manager", "bootstrap/status-reporter", &messages.PodStatusReport{Pod: pod})
			send("bootstrap/status-reporter", "bootstrap/status-reporter", &messages.NodeStatusTick{})
			send("bootstrap/gc", "bootstrap/gc", &messages.ContainerGC{})
			w := workers[n%len(workers)]
			send("bootstrap/pod-manager", w, &messages.UpdatePod{Pod: pod})
			send(w, w, &messages.PodSynced{})
			send(w, "bootstrap/pod-manager", &messages.PodStatusChanged{WorkerState: "syncing"})
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done) }
}

func pid(system *supervision.System, path string) *actor.PID {
	return actor.NewPID(system.Address(), path)
}

func waitRegistered(t *testing.T, reg *supervision.Registry, path string) {
	t.Helper()
	agent.Eventually(t, "actor "+path+" registered", 10*time.Second, func() error {
		if _, ok := reg.Actor(path); !ok {
			return fmt.Errorf("not in the registry")
		}
		return nil
	})
}
