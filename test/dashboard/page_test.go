package dashboard

import (
	"fmt"
	"slices"
	"testing"
)

// runtimeKinds are the actors every actorlet runs, besides the pod-workers.
var runtimeKinds = []string{"bootstrap", "config-source", "pod-manager", "volume-manager", "plugin-manager", "pleg", "status-reporter", "gc", "eviction", "node-shutdown", "kubelet-api"}

// jsNodeKinds lists the kind of every node drawn in the graph.
const jsNodeKinds = `[...document.querySelectorAll("#graph g.node")].map((g) => g.dataset.kind)`

// jsUnreadable lists what makes the graph's text hard to read: two boxes
// (nodes and flow labels) that overlap, or a label's text running out of
// its box.
const jsUnreadable = `(() => {
	const boxes = [];
	for (const g of document.querySelectorAll("#graph g.node, #graph g.flow-label")) {
		const r = g.querySelector("rect").getBoundingClientRect();
		const name = g.classList.contains("node") ? "node " + g.dataset.path : "label " + g.dataset.from + "→" + g.dataset.to;
		boxes.push({ name, r });
		if (g.classList.contains("flow-label")) {
			for (const t of g.querySelectorAll("text")) {
				const tr = t.getBoundingClientRect();
				if (tr.left < r.left - 0.5 || tr.right > r.right + 0.5 || tr.top < r.top - 0.5 || tr.bottom > r.bottom + 0.5) {
					boxes.problems = (boxes.problems || []).concat(name + ": text " + JSON.stringify(t.textContent) + " outside its box");
				}
			}
		}
	}
	const out = boxes.problems || [];
	for (let i = 0; i < boxes.length; i++) {
		for (let j = i + 1; j < boxes.length; j++) {
			const a = boxes[i].r, b = boxes[j].r;
			if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) {
				out.push(boxes[i].name + " overlaps " + boxes[j].name);
			}
		}
	}
	return out;
})()`

// checkGraph asserts that the graph draws every runtime actor and at least
// one message flow, and that none of its text is hidden by another.
func checkGraph(t *testing.T, b *browser) {
	t.Helper()
	kinds := eval[[]string](b, jsNodeKinds)
	for _, k := range runtimeKinds {
		if !slices.Contains(kinds, k) {
			t.Errorf("the graph has no %s node; nodes: %v", k, kinds)
		}
	}
	if n := eval[int](b, `document.querySelectorAll("#graph path.flow").length`); n == 0 {
		t.Error("the graph draws no message flow")
	}
	if bad := eval[[]string](b, jsUnreadable); len(bad) > 0 {
		t.Errorf("unreadable graph:\n%v", bad)
	}
}

// jsWorkerNode finds the graph node of a pod-worker.
func jsWorkerNode(path string) string {
	return fmt.Sprintf(`[...document.querySelectorAll("#graph g.node")].find((g) => g.dataset.path === %s)`, jsString(path))
}

// jsShownRestarts is what the page shows as the restarts of the actor at
// path, in the graph and in the actor table, as "graph/table".
func jsShownRestarts(path string) string {
	return fmt.Sprintf(`(() => {
		const node = %s;
		const row = [...document.querySelectorAll("#actors tbody tr")].find((r) => r.dataset.path === %s);
		return (node ? node.dataset.restarts : "-") + "/" + (row ? row.querySelector("td.restarts").textContent : "-");
	})()`, jsWorkerNode(path), jsString(path))
}
