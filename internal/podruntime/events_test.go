package podruntime

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/testutil"
)

func TestContainerFieldPath(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	for name, want := range map[string]string{
		"app":   "spec.containers{app}",
		"init":  "spec.initContainers{init}",
		"debug": "spec.ephemeralContainers{debug}",
		"gone":  "implicitly required container gone",
	} {
		if got := podref.FieldPath(pod, name); got != want {
			t.Errorf("field path of %s: %q, want %q", name, got, want)
		}
	}
}

func TestContainerEventNamesNoID(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &Runtime{Opts: Options{Recorder: rec}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	r.containerEvent(pod, "app", "0123abcd", v1.EventTypeWarning, events.FailedToCreateContainer, "Error: container 0123abcd: exec failed")
	r.killingEvent(pod, "0123abcd", "app", "")
	expectEvents(t, rec, "Warning Failed Error: container app: exec failed", "Normal Killing Stopping container app")

	// No recorder, no events (and no panic).
	(&Runtime{}).containerEvent(pod, "app", "", v1.EventTypeNormal, events.StartedContainer, "Container started")
}

// expectEvents checks the recorder's next events, each a regular expression
// of "TYPE REASON MESSAGE" matched whole, then that no other event came.
func expectEvents(t *testing.T, rec *record.FakeRecorder, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-rec.Events:
			if !regexp.MustCompile("^" + w + "$").MatchString(got) {
				t.Errorf("event %q, want %q", got, w)
			}
		default:
			t.Errorf("no event, want %q", w)
		}
	}
	select {
	case got := <-rec.Events:
		t.Errorf("unexpected event %q", got)
	default:
	}
}

func TestIntegrationEvents(t *testing.T) {
	e, r := newIntegration(t)
	rec := record.NewFakeRecorder(100)
	r.Opts.Recorder = rec
	ctx := context.Background()
	q := regexp.QuoteMeta

	pod := testPod(t, r, busybox(e, "main", "sleep", "3600"))
	res := r.SyncPod(ctx, pod, nil, NewCrashLoopBackoff(0, nil), nil)
	if res.Err != nil {
		t.Fatalf("sync: %v", res.Err)
	}
	expectEvents(t, rec, q(fmt.Sprintf("Normal Pulled Container image %q already present on machine", e.BusyboxImage)),
		"Normal Created Container created", "Normal Started Container started")
	grace := int64(0)
	if err := r.KillPodWithSpec(ctx, pod, &grace); err != nil {
		t.Fatalf("kill: %v", err)
	}
	expectEvents(t, rec, "Normal Killing Stopping container main")

	// A pull that fails, then backs off.
	missing := busybox(e, "missing", "true")
	missing.Image = e.Registry + "/actorlet/does-not-exist:1"
	pod = testPod(t, r, missing)
	backoff := NewCrashLoopBackoff(0, nil)
	if res := r.SyncPod(ctx, pod, nil, backoff, nil); res.Err == nil {
		t.Fatal("sync with a missing image succeeded")
	}
	expectEvents(t, rec, q(fmt.Sprintf("Normal Pulling Pulling image %q", missing.Image)),
		q(fmt.Sprintf("Warning Failed Failed to pull image %q: ", missing.Image))+".+",
		"Warning Failed Error: ErrImagePull")
	r.SyncPod(ctx, pod, nil, backoff, nil)
	expectEvents(t, rec, q(fmt.Sprintf("Normal BackOff Back-off pulling image %q", missing.Image)),
		"Warning Failed Error: ImagePullBackOff")

	never := missing
	never.ImagePullPolicy = v1.PullNever
	pod = testPod(t, r, never)
	r.SyncPod(ctx, pod, nil, backoff, nil)
	expectEvents(t, rec, q(fmt.Sprintf("Warning ErrImageNeverPull Container image %q is not present with pull policy of Never", never.Image)),
		"Warning Failed Error: ErrImageNeverPull")

	// A crash loop.
	pod = testPod(t, r, busybox(e, "crash", "false"))
	syncUntil(t, r, pod, backoff, time.Minute, "crashed", func(res SyncResult) bool {
		return apiContainer(res.APIStatus, "crash").LastTerminationState.Terminated != nil ||
			apiContainer(res.APIStatus, "crash").State.Terminated != nil
	})
	testutil.Events(rec)
	r.SyncPod(ctx, pod, nil, backoff, nil) // restarts it, recording the crash
	syncUntil(t, r, pod, backoff, time.Minute, "crashed again", func(res SyncResult) bool {
		w := apiContainer(res.APIStatus, "crash").State.Waiting
		return w != nil && w.Reason == ReasonCrashLoopBackOff
	})
	found := false
	for _, ev := range testutil.Events(rec) {
		found = found || ev == fmt.Sprintf("Warning BackOff Back-off restarting failed container crash in pod %s", podref.Desc(pod))
	}
	if !found {
		t.Errorf("no BackOff event for the crash loop of %s", podref.Desc(pod))
	}
}
