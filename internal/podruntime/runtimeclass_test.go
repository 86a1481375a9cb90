package podruntime

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/testutil"
)

// classes are the cluster's RuntimeClasses, name → handler.
type classes map[string]string

func (c classes) LookupRuntimeHandler(_ context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	h, ok := c[*name]
	if !ok {
		return "", apierrors.NewNotFound(schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclass"}, *name)
	}
	return h, nil
}

func TestSandboxRuntimeHandler(t *testing.T) {
	cases := []struct {
		name        string
		classes     RuntimeClasses
		class       string
		wantHandler string
		// wantEvent is the FailedCreatePodSandBox event; "": the sandbox runs.
		wantEvent string
	}{
		{name: "no class", classes: classes{"fast": "runc"}, wantHandler: ""},
		{name: "a class", classes: classes{"fast": "runc"}, class: "fast", wantHandler: "runc"},
		{name: "another handler", classes: classes{"vm": "kata"}, class: "vm", wantHandler: "kata"},
		{name: "unknown class", classes: classes{"fast": "runc"}, class: "nope",
			wantEvent: `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "nope" not found`},
		// Without an API server there is no manager: the default handler,
		// as upstream.
		{name: "standalone", classes: nil, class: "fast", wantHandler: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cri := fakecri.New()
			cri.AddImage("registry.test/app:1")
			events := record.NewFakeRecorder(100)
			rt := &Runtime{RT: cri, Img: cri, Opts: Options{
				PodLogsDir: t.TempDir(), NodeName: "node", NodeMemoryCapacity: 8 << 30,
				RuntimeRequestTimeout: 10 * time.Second, Recorder: events, RuntimeClasses: c.classes,
			}}
			grace := int64(1)
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
				Spec: v1.PodSpec{NodeName: "node", RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
					Containers: []v1.Container{{Name: "app", Image: "registry.test/app:1", ImagePullPolicy: v1.PullIfNotPresent}}},
			}
			if c.class != "" {
				pod.Spec.RuntimeClassName = &c.class
			}
			res := rt.SyncPod(context.Background(), pod, nil, nil, nil)
			sandboxes := cri.Sandboxes()
			if c.wantEvent != "" {
				if res.Err == nil || !apierrors.IsNotFound(res.Err) {
					t.Errorf("err = %v, want the class's NotFound", res.Err)
				}
				if len(sandboxes) != 0 {
					t.Errorf("sandboxes made: %v", sandboxes)
				}
				got := testutil.Events(events)
				if !strings.Contains(strings.Join(got, "\n"), c.wantEvent) {
					t.Errorf("events %q lack %q", got, c.wantEvent)
				}
				if res.APIStatus.Phase != v1.PodPending {
					t.Errorf("phase = %s, want Pending", res.APIStatus.Phase)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("sync: %v", res.Err)
			}
			if len(sandboxes) != 1 || sandboxes[0].RuntimeHandler != c.wantHandler {
				t.Fatalf("sandboxes %v, want one with handler %q", sandboxes, c.wantHandler)
			}
		})
	}
}
