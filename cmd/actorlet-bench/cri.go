package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

func dialCRI(endpoint string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, fmt.Errorf("dial CRI %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("CRI %s not answering: %w", endpoint, err)
	}
	return conn, nil
}

// runtimeObjects counts what the runtime holds for the pods of namespace
// ns (by the pod namespace label actorlet and the floor both set).
type runtimeObjects struct {
	Sandboxes      int `json:"sandboxes"`
	ReadySandboxes int `json:"readySandboxes"`
	Containers     int `json:"containers"`
}

func countRuntime(ctx context.Context, rt runtimeapi.RuntimeServiceClient, ns string) (runtimeObjects, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sel := map[string]string{podruntime.LabelPodNamespace: ns}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return runtimeObjects{}, fmt.Errorf("list sandboxes of namespace %s: %w", ns, err)
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return runtimeObjects{}, fmt.Errorf("list containers of namespace %s: %w", ns, err)
	}
	o := runtimeObjects{Sandboxes: len(sbs.Items), Containers: len(cs.Containers)}
	for _, sb := range sbs.Items {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			o.ReadySandboxes++
		}
	}
	return o, nil
}

// readySandboxes counts the ready sandboxes of namespace ns, with a filter
// on state so that containerd sends no more than it must: it is polled
// while actorlet deletes.
func readySandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient, ns string) (int, error) {
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{podruntime.LabelPodNamespace: ns},
	}})
	if err != nil {
		return 0, fmt.Errorf("list ready sandboxes of namespace %s: %w", ns, err)
	}
	return len(resp.Items), nil
}

// removeSandboxes stops and removes every sandbox of namespace ns, with its
// containers. It runs at cleanup, also after an interrupt, so it has its own
// context.
func removeSandboxes(rt runtimeapi.RuntimeServiceClient, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podruntime.LabelPodNamespace: ns},
	}})
	if err != nil {
		return fmt.Errorf("list sandboxes of namespace %s: %w", ns, err)
	}
	var errs []error
	for _, sb := range resp.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s of %s/%s: %w", sb.Id, ns, sb.Metadata.GetName(), err))
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s of %s/%s: %w", sb.Id, ns, sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// randSuffix makes the names of a run's namespaces unique, so that runs of
// this program and tests of others never share one.
func randSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
