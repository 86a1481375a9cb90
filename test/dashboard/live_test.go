package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// seenWithin is how soon after the registry changes the page must show it:
// the dashboard promises a second (docs/dashboard.md), with 3x slack.
const seenWithin = 3 * time.Second

// TestDashboardLive opens a standalone actorlet's dashboard in chromium and
// watches it, without reloading: the tree renders, a new static pod's worker
// appears, its timeline opens on a click, and its restart count goes up (and
// the panic shows in its timeline) when a panic is injected into it.
func TestDashboardLive(t *testing.T) {
	n := startNode(t)
	b := newBrowser(t)
	started := time.Now()

	b.open(n.url("/debug/actors"), `#graph g.node[data-kind="pod-manager"]`, 30*time.Second)
	checkGraph(t, b)
	if steps := eval[int](b, `document.querySelectorAll("#steps tbody tr").length`); steps == 0 {
		t.Error("no bootstrap steps shown")
	}
	// A reload would lose this mark.
	eval[bool](b, `window.sameDocument = true`)
	b.click("show pod-workers", `document.getElementById("expand")`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := "bootstrap/pod-manager/default/web-" + n.Name + "@"
	spawned := n.watchActors(ctx, func(actors []actorInfo) bool {
		for _, a := range actors {
			if strings.HasPrefix(a.Path, prefix) {
				return true
			}
		}
		return false
	})
	written := time.Now()
	n.writePod("web")
	worker := poll[string](b, "the new pod's worker in the graph", fmt.Sprintf(
		`[...document.querySelectorAll("#graph g.node[data-kind='pod-worker']")].map((g) => g.dataset.path).find((p) => p.startsWith(%s))`,
		jsString(prefix)), 30*time.Second)
	shown := time.Now()
	if lag := shown.Sub((<-spawned).at); lag > seenWithin {
		t.Errorf("the worker showed %v after it was registered, want within %v", lag, seenWithin)
	}
	t.Logf("worker %s shown %v after its manifest was written", worker, shown.Sub(written))
	if !eval[bool](b, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}

	b.click("the worker's node", jsWorkerNode(worker))
	poll[bool](b, "the worker's timeline", fmt.Sprintf(`document.getElementById("tl-path").textContent === %s &&
		[...document.querySelectorAll("#timeline tbody tr")].some((r) => r.cells[1].textContent === "UpdatePod" && r.cells[2].textContent === "bootstrap/pod-manager")`,
		jsString(worker)), 10*time.Second)

	n.Running("web", 60*time.Second)
	if got := eval[string](b, jsShownRestarts(worker)); got != "0/0" {
		t.Fatalf("restarts shown before the panic (graph/table) = %s, want 0/0", got)
	}
	restarted := n.watchActors(ctx, func(actors []actorInfo) bool {
		for _, a := range actors {
			if a.Path == worker && a.Restarts == 1 {
				return true
			}
		}
		return false
	})
	n.InjectPanic(worker, "")
	poll[bool](b, "the restart in the graph and the table", jsShownRestarts(worker)+` === "1/1"`, 30*time.Second)
	shown = time.Now()
	if lag := shown.Sub((<-restarted).at); lag > seenWithin {
		t.Errorf("the restart showed %v after it was registered, want within %v", lag, seenWithin)
	}
	failure := eval[string](b, fmt.Sprintf(`[...document.querySelectorAll("#actors tbody tr")].find((r) => r.dataset.path === %s).cells[7].textContent`, jsString(worker)))
	if !strings.Contains(failure, "inject") {
		t.Errorf("last failure shown = %q, want the injected panic", failure)
	}

	// The open timeline keeps itself current: the panic shows there too.
	poll[bool](b, "the injected panic in the worker's timeline",
		`[...document.querySelectorAll("#timeline tbody tr")].some((r) => r.cells[1].textContent === "InjectPanic" && r.cells[2].textContent === "external")`,
		10*time.Second)

	checkGraph(t, b)
	b.screenshot("dashboard-live.png")
	b.checkNoPageErrors()
	t.Logf("browser test took %v", time.Since(started))
}
