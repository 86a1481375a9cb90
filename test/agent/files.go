package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// WriteManifest places a static pod manifest in dir atomically (a dot-file
// renamed into place), as configuration management tools do, so that the
// agent never reads it half-written.
func WriteManifest(t testing.TB, dir, file, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

// RemoveManifest removes a static pod manifest from dir.
func RemoveManifest(t testing.TB, dir, file string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

// RuntimeObjects counts the sandboxes and containers the runtime holds for
// a pod UID.
func RuntimeObjects(t testing.TB, rt runtimeapi.RuntimeServiceClient, uid string) (sandboxes, containers int) {
	t.Helper()
	sel := map[string]string{"io.kubernetes.pod.uid": uid}
	return len(Sandboxes(t, rt, sel)), len(Containers(t, rt, sel))
}

// Sandboxes lists the runtime's sandboxes whose labels include sel.
func Sandboxes(t testing.TB, rt runtimeapi.RuntimeServiceClient, sel map[string]string) []*runtimeapi.PodSandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Items
}

// Containers lists the runtime's containers whose labels include sel.
func Containers(t testing.TB, rt runtimeapi.RuntimeServiceClient, sel map[string]string) []*runtimeapi.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Containers
}

// RemoveSandboxes stops and removes every sandbox of the runtime that
// match selects (a test's cleanup of the pods its actorlet left running),
// logging what fails.
func RemoveSandboxes(t testing.TB, rt runtimeapi.RuntimeServiceClient, match func(*runtimeapi.PodSandbox) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Logf("cleanup: list sandboxes: %v", err)
		return
	}
	for _, sb := range sbs.Items {
		if !match(sb) {
			continue
		}
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id})
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Logf("cleanup: remove sandbox %s: %v", sb.Id, err)
		}
	}
}

// OfNode selects the sandboxes of the static pods of node (named NAME-NODE).
func OfNode(node string) func(*runtimeapi.PodSandbox) bool {
	return func(sb *runtimeapi.PodSandbox) bool {
		return strings.HasSuffix(sb.Labels["io.kubernetes.pod.name"], "-"+node)
	}
}
