// Command envcri is the small CRI client hack/node-env uses (a crictl
// stand-in built from this module): health checks, pulling images through
// CRI and removing every pod sandbox and container before shutdown.
//
//	envcri -endpoint unix:///var/lib/actorlet-env/containerd.sock version
//	envcri -endpoint ... pull IMAGE...   (pulls only images not present)
//	envcri -endpoint ... has IMAGE       (exit 0 when present, 1 when not)
//	envcri -endpoint ... rmi IMAGE...    (removes images that are present)
//	envcri -endpoint ... rmpods          (stop+remove all sandboxes and containers)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", os.Getenv("CONTAINER_RUNTIME_ENDPOINT"), "CRI endpoint (unix://PATH)")
	timeout := flag.Duration("timeout", 2*time.Minute, "overall timeout")
	flag.Parse()
	if *endpoint == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: envcri -endpoint unix://SOCK version|pull IMG...|has IMG|rmi IMG...|rmpods")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	code, err := run(ctx, *endpoint, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "envcri:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(ctx context.Context, endpoint string, args []string) (int, error) {
	target := endpoint
	if !strings.HasPrefix(target, "unix://") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 1, err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	img := runtimeapi.NewImageServiceClient(conn)

	switch args[0] {
	case "version":
		v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			return 1, err
		}
		st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			return 1, err
		}
		// Ready as a kubelet judges it: RuntimeReady and NetworkReady. Other
		// conditions are informational (containerd 2.x reports
		// ContainerdHasNoDeprecationWarnings=false on cgroup v1).
		ready := true
		for _, c := range st.GetStatus().GetConditions() {
			if !c.Status {
				required := c.Type == runtimeapi.RuntimeReady || c.Type == runtimeapi.NetworkReady
				ready = ready && !required
				fmt.Printf("condition %s=false: %s %s\n", c.Type, c.Reason, c.Message)
			}
		}
		fmt.Printf("%s %s (CRI %s) ready=%v\n", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion, ready)
		if !ready {
			return 1, nil
		}
		return 0, nil
	case "has":
		if len(args) != 2 {
			return 2, fmt.Errorf("has takes one image")
		}
		ok, err := present(ctx, img, args[1])
		if err != nil {
			return 1, err
		}
		if !ok {
			return 1, nil
		}
		return 0, nil
	case "pull":
		for _, name := range args[1:] {
			ok, err := present(ctx, img, name)
			if err != nil {
				return 1, err
			}
			if ok {
				continue
			}
			resp, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: name}})
			if err != nil {
				return 1, fmt.Errorf("pull %s: %w", name, err)
			}
			fmt.Printf("pulled %s %s\n", name, resp.ImageRef)
		}
		return 0, nil
	case "rmi":
		for _, name := range args[1:] {
			ok, err := present(ctx, img, name)
			if err != nil {
				return 1, err
			}
			if !ok {
				continue
			}
			if _, err := img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: name}}); err != nil {
				return 1, fmt.Errorf("rmi %s: %w", name, err)
			}
		}
		return 0, nil
	case "rmpods":
		return rmpods(ctx, rt)
	}
	return 2, fmt.Errorf("unknown command %q", args[0])
}

func present(ctx context.Context, img runtimeapi.ImageServiceClient, name string) (bool, error) {
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: name}})
	if err != nil {
		return false, err
	}
	return st.Image != nil, nil
}

func rmpods(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (int, error) {
	var failed []string
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return 1, err
	}
	for _, c := range cs.Containers {
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: 2}); err != nil {
			failed = append(failed, fmt.Sprintf("stop container %s: %v", c.Id, err))
		}
		if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id}); err != nil {
			failed = append(failed, fmt.Sprintf("remove container %s: %v", c.Id, err))
		}
	}
	ps, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 1, err
	}
	for _, p := range ps.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			failed = append(failed, fmt.Sprintf("stop sandbox %s: %v", p.Id, err))
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			failed = append(failed, fmt.Sprintf("remove sandbox %s: %v", p.Id, err))
		}
	}
	fmt.Printf("removed %d containers, %d sandboxes\n", len(cs.Containers), len(ps.Items))
	if len(failed) > 0 {
		return 1, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return 0, nil
}
