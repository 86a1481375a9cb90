package kubeadm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// controlPlane is what kubeadm init runs as static pods on its node.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// TestInit builds a one-node cluster the way users do (hack/cluster up
// --nodes 1: kubeadm init in a network and mount namespace of its own,
// with its own containerd, the kubelet started through kubeadm's drop-in)
// and sees on it what a kubelet must give kubeadm: the control plane as
// static pods with their mirror pods, kube-proxy and CoreDNS from kubeadm's
// addons Running, and a pod scheduled there that resolves
// kubernetes.default.svc.cluster.local through CoreDNS and reaches the API
// server through its Service (kube-proxy's rules).
func TestInit(t *testing.T) {
	e := env.Require(t, env.WithCluster())
	script := filepath.Join(filepath.Dir(e.Script), "cluster")
	if exec.Command(script, "status").Run() == nil {
		t.Skip("a cluster is up (make cluster): its names and addresses are the ones this test uses; make cluster-down first")
	}
	run := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, args...)
		cmd.Env = append(os.Environ(), "KUBELET="+kubeletArg())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if out, err := run(5*time.Minute, "down"); err != nil {
			t.Errorf("hack/cluster down: %v\n%s", err, env.Tail(out, 20))
		}
	})
	start := time.Now()
	if out, err := run(20*time.Minute, "up", "--nodes", "1"); err != nil {
		dir := clusterDir(e)
		t.Fatalf("hack/cluster up --nodes 1: %v after %s\n%s\nkubeadm: %s\nkubelet: %s", err,
			time.Since(start).Round(time.Second), env.Tail(out, 40),
			env.Tail(readFile(filepath.Join(dir, "n1", "kubeadm.log")), 30),
			env.Tail(readFile(filepath.Join(dir, "n1", "kubelet.log")), 60))
	}
	t.Logf("one-node cluster up in %s", time.Since(start).Round(time.Second))

	cs := clusterClient(t, filepath.Join(clusterDir(e), "admin.conf"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]v1.Pod{}
	for _, p := range pods.Items {
		byName[p.Name] = p
	}
	for _, c := range controlPlane {
		p, ok := byName[c+"-acl-n1"]
		switch {
		case !ok:
			t.Errorf("no mirror pod %s-acl-n1", c)
		case p.Annotations[v1.MirrorPodAnnotationKey] == "":
			t.Errorf("%s is not a mirror pod: annotations %v", p.Name, p.Annotations)
		case p.Status.Phase != v1.PodRunning:
			t.Errorf("%s is %s, want Running", p.Name, p.Status.Phase)
		}
	}
	for _, app := range []string{"k8s-app=kube-proxy", "k8s-app=kube-dns"} {
		ps, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: app})
		if err != nil {
			t.Fatal(err)
		}
		if len(ps.Items) == 0 {
			t.Errorf("no pod %s", app)
		}
		for _, p := range ps.Items {
			if p.Status.Phase != v1.PodRunning {
				t.Errorf("%s (%s) is %s, want Running", p.Name, app, p.Status.Phase)
			}
		}
	}

	// Two backends behind a Service: kube-proxy spreads a Service over
	// more than one endpoint with iptables' statistic match, which needs
	// what its image carries beside iptables itself.
	backends := createBackends(ctx, t, cs, "two", 2)

	// A pod through the scheduler, that resolves the API server's Service
	// name with CoreDNS and reaches its backend through kube-proxy's rules,
	// then reaches both backends of the other Service.
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-and-service", Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:  "curl",
				Image: "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
				Command: []string{"sh", "-c",
					"curl -sSk --max-time 10 --retry 5 --retry-all-errors https://kubernetes.default.svc.cluster.local/livez; echo; " +
						"for i in $(seq 60); do curl -s --max-time 2 http://two.default.svc.cluster.local/hostname; echo; done"},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *v1.Pod
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if last, err = cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); err == nil &&
			(last.Status.Phase == v1.PodSucceeded || last.Status.Phase == v1.PodFailed) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	// curl's retries may print an error first: kube-proxy programs the
	// DNS Service's rules a moment after CoreDNS is Ready.
	logs, lerr := cs.CoreV1().Pods("default").GetLogs(pod.Name, &v1.PodLogOptions{}).DoRaw(ctx)
	seen := map[string]bool{}
	for _, l := range strings.Split(string(logs), "\n") {
		seen[strings.TrimSpace(l)] = true
	}
	if last == nil || last.Status.Phase != v1.PodSucceeded || !seen["ok"] {
		t.Fatalf("the pod did not resolve and reach kubernetes.default: phase %v, node %q, logs %q (%v)",
			phaseOf(last), nodeOf(last), logs, lerr)
	}
	for _, b := range backends {
		if !seen[b] {
			t.Errorf("Service two's backend %s never answered through the Service (kube-proxy's rules for two endpoints); logs %q", b, logs)
		}
	}
	if last.Spec.NodeName != "acl-n1" {
		t.Errorf("the pod ran on %q, want acl-n1", last.Spec.NodeName)
	}
}

// createBackends creates n agnhost netexec pods and a Service NAME in front
// of them, waits until every pod is Running and Ready, and returns their
// names (what /hostname answers).
func createBackends(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, n int) []string {
	t.Helper()
	labels := map[string]string{"app": name}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.ServiceSpec{
			Selector: labels,
			Ports:    []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: labels},
			Spec: v1.PodSpec{Containers: []v1.Container{{
				Name:  "netexec",
				Image: "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
				Args:  []string{"netexec", "--http-port=8080"},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)},
				}, PeriodSeconds: 1},
			}}},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, nm := range names {
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, nm, metav1.GetOptions{})
			if err == nil && agent.PodReady(p) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backend %s not Ready: %v", nm, err)
			}
			time.Sleep(time.Second)
		}
	}
	return names
}

// kubeletArg is hack/cluster's KUBELET: the binary the package runs.
func kubeletArg() string {
	if kubelet.Upstream {
		return "upstream"
	}
	return kubelet.Binary
}

// clusterDir is hack/cluster's state directory (ACTORLET_CLUSTER_DIR).
func clusterDir(e *env.Env) string {
	if d := os.Getenv("ACTORLET_CLUSTER_DIR"); d != "" {
		return d
	}
	return filepath.Join(e.StateDir, "cluster")
}

func clusterClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(b)
}

func phaseOf(p *v1.Pod) v1.PodPhase {
	if p == nil {
		return "unknown"
	}
	return p.Status.Phase
}

func nodeOf(p *v1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Spec.NodeName
}
