package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
)

// Get fetches url with client and returns the status code and the body; a
// request that fails fails t.
func Get(t testing.TB, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ParseMetrics parses a page of metrics in the Prometheus text format, as
// Prometheus does; a page that does not parse fails t, naming what.
func ParseMetrics(t testing.TB, what, page string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("%s does not parse: %v", what, err)
	}
	return families
}

// ReadOnlyPods GETs /pods from the read-only port on loopback.
func ReadOnlyPods(port int) ([]v1.Pod, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: %s: %s", resp.Status, body)
	}
	var list v1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /pods: %w", err)
	}
	return list.Items, nil
}

// StaticPod finds the static pod of manifest name on node in the read-only
// port's /pods (static pods are named NAME-NODE).
func StaticPod(port int, name, node string) (*v1.Pod, error) {
	pods, err := ReadOnlyPods(port)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == name+"-"+node {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("pod %s not in /pods", name)
}

// PodRunning is nil when the pod's phase is Running with every container
// running.
func PodRunning(p *v1.Pod) error {
	if p.Status.Phase != v1.PodRunning {
		return fmt.Errorf("pod %s: phase %q", p.Name, p.Status.Phase)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return fmt.Errorf("pod %s: container %s not running: %+v", p.Name, cs.Name, cs.State)
		}
	}
	return nil
}

// Manifest renders a static pod manifest from its name and the YAML of its
// spec (indented two spaces).
func Manifest(name, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// SleepSpec is the spec (for Manifest) of a pod whose one container, named
// container, sleeps for an hour in image, with a termination grace period
// of grace seconds.
func SleepSpec(container, image string, grace int) string {
	return fmt.Sprintf("  terminationGracePeriodSeconds: %d\n  containers:\n  - name: %s\n    image: %s\n    command: [\"sleep\", \"3600\"]\n",
		grace, container, image)
}
