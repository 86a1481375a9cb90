package kubeletapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// check is one named health check, as upstream's healthz checkers.
type check struct {
	name string
	run  func() error
}

// healthz answers like upstream's healthz handler: "ok", or with ?verbose
// one "[+]name ok" / "[-]name failed" line per check; 500 when any fails.
func (a *Actor) healthz(w http.ResponseWriter, r *http.Request) {
	state, err := a.state.get(r.Context(), snapshotMaxAge)
	if err != nil {
		return // the client went away
	}
	checks := []check{
		{"ping", func() error { return nil }},
		{"runtime", func() error { return a.runtimeHealth(r.Context()) }},
		{"pleg", func() error { return state.pleg }},
		{"syncloop", func() error { return state.podManager }},
	}
	var out strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.run(); err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.name, err)
			a.log.Warn().Str("check", c.name).Err(err).Msg("healthz check failed")
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, out.String()+"healthz check failed\n")
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprint(w, out.String()+"healthz check passed\n")
		return
	}
	fmt.Fprint(w, "ok")
}

// runtimeHealth asks the runtime for its status: it must answer and report
// RuntimeReady.
func (a *Actor) runtimeHealth(ctx context.Context) error {
	if a.p.Runtime == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	resp, err := a.p.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("container runtime status: %w", err)
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady && !c.Status {
			return fmt.Errorf("container runtime not ready: %s: %s", c.Reason, c.Message)
		}
	}
	return nil
}

// pods serves the node's pods as a v1.PodList, as upstream's /pods, from
// the snapshot.
func (a *Actor) pods(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed: /pods takes GET", http.StatusMethodNotAllowed)
		return
	}
	state, err := a.state.get(r.Context(), snapshotMaxAge)
	if err != nil {
		return // the client went away
	}
	if state.podsErr != nil {
		http.Error(w, "list pods: "+state.podsErr.Error(), http.StatusServiceUnavailable)
		return
	}
	list := state.pods
	body := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: list.Pods}
	if body.Items == nil {
		body.Items = []v1.Pod{}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&body); err != nil {
		a.log.Warn().Err(err).Msg("write /pods")
	}
}

// injectPanic makes the actor at ?actor=PATH panic once (tests only; needs
// --debug-fault-injection): in its handler, or with ?in=sync-work (a
// pod-worker) in the work of its next sync, off its mailbox.
func (a *Actor) injectPanic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed: /debug/inject/panic takes POST", http.StatusMethodNotAllowed)
		return
	}
	path := r.URL.Query().Get("actor")
	if path == "" {
		http.Error(w, "missing query parameter actor (the actor's path, e.g. bootstrap/pod-manager)", http.StatusBadRequest)
		return
	}
	info, ok := a.p.System.Registry.Actor(path)
	if !ok {
		http.Error(w, fmt.Sprintf("no live actor at %q", path), http.StatusNotFound)
		return
	}
	msg := &supervision.InjectPanic{Reason: "POST /debug/inject/panic from " + r.RemoteAddr}
	switch in := r.URL.Query().Get("in"); in {
	case "":
	case "sync-work":
		if info.Kind != messages.PodWorkerKind {
			http.Error(w, fmt.Sprintf("in=sync-work: %q is a %s; only a pod-worker has sync work", path, info.Kind), http.StatusBadRequest)
			return
		}
		msg.InSyncWork = true
	default:
		http.Error(w, fmt.Sprintf("query parameter in=%q: want sync-work (a pod-worker's next sync work) or nothing (the actor's handler)", in), http.StatusBadRequest)
		return
	}
	supervision.TellFromOutside(a.p.System.ActorSystem, actor.NewPID(a.p.System.Address(), path), msg)
	a.log.Warn().Str("target", path).Bool("inSyncWork", msg.InSyncWork).Msg("fault injected: the actor will panic once")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "panic injected into %s\n", path)
}

// runningPods lists the pods the runtime runs, as upstream's /runningpods/:
// built from the runtime's sandboxes and containers, not the pod-manager.
func (a *Actor) runningPods(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed: /runningpods/ takes GET", http.StatusMethodNotAllowed)
		return
	}
	sandboxes, err := a.p.Runtime.ListPodSandbox(r.Context(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		http.Error(w, "list running pods: ListPodSandbox: "+err.Error(), http.StatusInternalServerError)
		return
	}
	containers, err := a.p.Runtime.ListContainers(r.Context(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		http.Error(w, "list running pods: ListContainers: "+err.Error(), http.StatusInternalServerError)
		return
	}
	a.jsonResponse(w, "/runningpods/", runningPodList(sandboxes.Items, containers.Containers))
}

// runningPodList shapes runtime pods as upstream does: a v1.PodList whose
// pods carry name, namespace, UID and their running containers' names and
// images, nothing else.
func runningPodList(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) *v1.PodList {
	list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{}}
	index := map[string]int{}
	for _, s := range sandboxes {
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY || s.Metadata == nil {
			continue
		}
		if _, seen := index[s.Metadata.Uid]; seen {
			continue
		}
		index[s.Metadata.Uid] = len(list.Items)
		list.Items = append(list.Items, v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: s.Metadata.Name, Namespace: s.Metadata.Namespace, UID: types.UID(s.Metadata.Uid)}})
	}
	for _, c := range containers {
		i, ok := index[c.Labels[podruntime.LabelPodUID]]
		if !ok || c.Metadata == nil {
			continue
		}
		image := c.ImageRef
		if c.Image != nil && c.Image.Image != "" {
			image = c.Image.Image
		}
		list.Items[i].Spec.Containers = append(list.Items[i].Spec.Containers, v1.Container{Name: c.Metadata.Name, Image: image})
	}
	return list
}

// configz serves the effective configuration, as upstream's /configz:
// {"kubeletconfig": {...}}.
func (a *Actor) configz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed: /configz takes GET", http.StatusMethodNotAllowed)
		return
	}
	if a.p.Configz == nil {
		http.Error(w, "configz: no configuration", http.StatusNotFound)
		return
	}
	a.jsonResponse(w, "/configz", map[string]any{"kubeletconfig": a.p.Configz})
}
