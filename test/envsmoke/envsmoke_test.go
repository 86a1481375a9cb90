// Package envsmoke checks the real test environment of hack/node-env
// (containerd CRI + CNI, local registry, kube-apiserver with Node
// authorization and NodeRestriction, kube-controller-manager).
package envsmoke

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/env"
)

func suffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestCRISandboxAndContainer runs a pod sandbox with a busybox container
// through CRI, checks the pod IP, reads the CRI log and reaches the pod's
// HTTP server from the host over the pod network.
func TestCRISandboxAndContainer(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, _ := e.CRI(t)
	ctx := ctxFor(t, 2*time.Minute)

	name := "envsmoke-" + suffix()
	logDir := filepath.Join(e.StateDir, "pods", name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(logDir) })

	sbCfg := env.SandboxConfig(name, name+"-uid", "envsmoke", logDir, map[string]string{"actorlet.io/test": "envsmoke"})
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	sbID := sb.PodSandboxId
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
			t.Errorf("StopPodSandbox: %v", err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
			t.Errorf("RemovePodSandbox: %v", err)
		}
	})

	st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sbID})
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	ip := net.ParseIP(st.GetStatus().GetNetwork().GetIp())
	_, podNet, err := net.ParseCIDR(e.PodCIDR)
	if err != nil {
		t.Fatalf("pod CIDR %q: %v", e.PodCIDR, err)
	}
	if ip == nil || !podNet.Contains(ip) {
		t.Fatalf("sandbox IP %q not in %s", st.GetStatus().GetNetwork().GetIp(), e.PodCIDR)
	}
	t.Logf("sandbox %s IP %s", sbID[:12], ip)

	const marker = "hello-from-envsmoke"
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sbID,
		SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "busybox"},
			Image:    &runtimeapi.ImageSpec{Image: e.BusyboxImage},
			Command:  []string{"sh", "-c", "echo " + marker + "; echo envsmoke-ok > /var/www/index.html; exec httpd -f -p 8080 -h /var/www"},
			LogPath:  "busybox/0.log",
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	cID := c.ContainerId
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: cID, Timeout: 1})
		if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cID}); err != nil {
			t.Errorf("RemoveContainer: %v", err)
		}
	})
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cID}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}

	// The CRI log: "<RFC3339Nano> stdout F hello-from-envsmoke".
	logPath := filepath.Join(logDir, "busybox", "0.log")
	var line string
	deadline := time.Now().Add(30 * time.Second)
	for line == "" && time.Now().Before(deadline) {
		if f, err := os.Open(logPath); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.HasSuffix(sc.Text(), " "+marker) {
					line = sc.Text()
				}
			}
			f.Close()
		}
		if line == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if line == "" {
		t.Fatalf("marker not in CRI log %s", logPath)
	}
	fields := strings.SplitN(line, " ", 4)
	if len(fields) != 4 || fields[1] != "stdout" || fields[2] != "F" {
		t.Fatalf("CRI log line not in CRI format: %q", line)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields[0]); err != nil {
		t.Fatalf("CRI log timestamp %q: %v", fields[0], err)
	}

	cs, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cID})
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	if s := cs.GetStatus().GetState(); s != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container state %v, want running", s)
	}

	// The pod is reachable from the host on its pod IP.
	url := fmt.Sprintf("http://%s/index.html", net.JoinHostPort(ip.String(), "8080"))
	client := &http.Client{Timeout: 2 * time.Second}
	var body string
	for body == "" {
		resp, err := client.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if body != "envsmoke-ok" {
		t.Fatalf("GET %s = %q", url, body)
	}
}

// TestPullFromLocalRegistry pulls an image that only the local registry has
// (docker.io/library/busybox:pulltest) through CRI, and checks that an
// unknown image is a clean NotFound from that registry.
func TestPullFromLocalRegistry(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	_, img := e.CRI(t)
	ctx := ctxFor(t, 2*time.Minute)

	const ref = "docker.io/library/busybox:pulltest"
	spec := &runtimeapi.ImageSpec{Image: ref}
	// containerd removes an image with all its names, and pulltest is the
	// busybox image under another tag: put busybox back for the other tests.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: e.BusyboxImage}}); err != nil {
			t.Errorf("restore %s: %v", e.BusyboxImage, err)
		}
	})
	removeIfPresent := func() {
		st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
		if err != nil {
			t.Fatalf("ImageStatus: %v", err)
		}
		if st.Image != nil {
			if _, err := img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: spec}); err != nil {
				t.Fatalf("RemoveImage: %v", err)
			}
		}
	}
	removeIfPresent()
	t.Cleanup(removeIfPresent)

	resp, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec})
	if err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil || st.Image == nil {
		t.Fatalf("ImageStatus after pull: %v %v", st, err)
	}
	found := false
	for _, tag := range st.Image.RepoTags {
		found = found || tag == ref
	}
	if !found {
		t.Fatalf("pulled image %s has tags %v", resp.ImageRef, st.Image.RepoTags)
	}

	// The registry has it under library/busybox; it has no nosuchimage.
	get := func(path string) int {
		req, _ := http.NewRequest(http.MethodHead, "http://"+e.Registry+path, nil)
		req.Header.Add("Accept", "application/vnd.oci.image.manifest.v1+json")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("registry %s: %v", path, err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if c := get("/v2/library/busybox/manifests/pulltest"); c != http.StatusOK {
		t.Fatalf("registry: busybox:pulltest status %d", c)
	}
	if c := get("/v2/library/nosuchimage/manifests/1.0"); c != http.StatusNotFound {
		t.Fatalf("registry: nosuchimage status %d, want 404", c)
	}

	_, err = img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "docker.io/library/nosuchimage:1.0"}})
	if err == nil {
		t.Fatal("pull of docker.io/library/nosuchimage:1.0 succeeded")
	}
	if !strings.Contains(err.Error(), "not found") {
		t.Fatalf("pull of unknown image: error does not say not found: %v", err)
	}
	t.Logf("unknown image: %v", err)
}

// TestNodeCredentials reads and writes the node's own Node object with the
// node's kubeconfig and is refused writing another node's.
func TestNodeCredentials(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	env.HoldRuntime(t)
	nc, ac := e.NodeClient(t), e.AdminClient(t)
	ctx := ctxFor(t, time.Minute)
	nodes := nc.CoreV1().Nodes()

	_, err := nodes.Get(ctx, e.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.NodeName}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("node creating its own Node: %v", err)
		}
		t.Cleanup(func() {
			_ = ac.CoreV1().Nodes().Delete(context.Background(), e.NodeName, metav1.DeleteOptions{})
		})
	case err != nil:
		t.Fatalf("node reading its own Node: %v", err)
	}

	label := "envsmoke.actorlet.io/" + suffix()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"yes"}}}`, label)
	node, err := nodes.Patch(ctx, e.NodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("node patching its own Node: %v", err)
	}
	if node.Labels[label] != "yes" {
		t.Fatalf("label not set: %v", node.Labels)
	}
	t.Cleanup(func() {
		unpatch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label)
		_, _ = ac.CoreV1().Nodes().Patch(context.Background(), e.NodeName, types.MergePatchType, []byte(unpatch), metav1.PatchOptions{})
	})

	other := "envsmoke-other-" + suffix()
	_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("node creating another node's Node: err %v, want Forbidden", err)
	}
	if _, err := ac.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin creating Node %s: %v", other, err)
	}
	t.Cleanup(func() { _ = ac.CoreV1().Nodes().Delete(context.Background(), other, metav1.DeleteOptions{}) })
	_, err = nodes.Patch(ctx, other, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("node patching another node's Node: err %v, want Forbidden", err)
	}
}

// TestPodWithServiceAccount creates a pod in namespace default as admin: the
// ServiceAccount admission plugin accepts it because the controller manager
// made the default ServiceAccount.
func TestPodWithServiceAccount(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	env.HoldRuntime(t)
	ac := e.AdminClient(t)
	ctx := ctxFor(t, time.Minute)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "envsmoke-", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: e.BusyboxImage, Command: []string{"sleep", "3600"}}},
		},
	}
	got, err := ac.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	zero := int64(0)
	t.Cleanup(func() {
		_ = ac.CoreV1().Pods("default").Delete(context.Background(), got.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	// kube-api-access volumes need the kube-root-ca.crt ConfigMap.
	for {
		_, err := ac.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("ConfigMap default/kube-root-ca.crt: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got.Spec.ServiceAccountName != "default" {
		t.Fatalf("serviceAccountName %q, want default", got.Spec.ServiceAccountName)
	}
	projected := false
	for _, v := range got.Spec.Volumes {
		projected = projected || (v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-"))
	}
	if !projected {
		t.Fatalf("no kube-api-access projected volume added: %+v", got.Spec.Volumes)
	}
	if err := ac.CoreV1().Pods("default").Delete(ctx, got.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	for {
		_, err := ac.CoreV1().Pods("default").Get(ctx, got.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s not gone: %v", got.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
