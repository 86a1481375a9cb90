package agent

import (
	"context"
	"os"
	"path/filepath"
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := map[string]string{"io.kubernetes.pod.uid": uid}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	return len(sbs.Items), len(cs.Containers)
}
