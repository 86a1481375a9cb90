package podruntime

import (
	"context"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/volume"
)

// registry is the fake runtime whose registry lacks the images in missing;
// it records the pulls and each created container's image mounts.
type registry struct {
	*fakecri.Runtime
	missing map[string]bool
	mu      sync.Mutex
	pulls   []string
	mounts  map[string][]*runtimeapi.Mount // by container name
}

func (r *registry) PullImage(ctx context.Context, in *runtimeapi.PullImageRequest, opts ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	r.mu.Lock()
	r.pulls = append(r.pulls, in.GetImage().GetImage())
	r.mu.Unlock()
	if r.missing[in.GetImage().GetImage()] {
		return nil, status.Errorf(codes.NotFound, "failed to pull and unpack image %q: not found", in.GetImage().GetImage())
	}
	return r.Runtime.PullImage(ctx, in, opts...)
}

func (r *registry) CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	var images []*runtimeapi.Mount
	for _, m := range in.GetConfig().GetMounts() {
		if m.Image != nil {
			images = append(images, m)
		}
	}
	r.mu.Lock()
	r.mounts[in.GetConfig().GetMetadata().GetName()] = images
	r.mu.Unlock()
	return r.Runtime.CreateContainer(ctx, in, opts...)
}

// TestImageVolumeSync: a pass pulls the pod's image volumes before its
// containers, with each volume's pull policy, and mounts each pulled image
// read-only into the containers that mount the volume, as upstream's
// SyncPod; a volume whose pull fails holds back only those containers,
// which wait with the pull's reason.
func TestImageVolumeSync(t *testing.T) {
	const (
		app     = "registry.test/app:1"
		data    = "registry.test/data:1"
		missing = "registry.test/missing:1"
	)
	imageVol := func(name, ref string, policy v1.PullPolicy) v1.Volume {
		return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}
	}
	container := func(name string, mounts ...v1.VolumeMount) v1.Container {
		return v1.Container{Name: name, Image: app, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mounts}
	}
	at := func(vol, path string) v1.VolumeMount { return v1.VolumeMount{Name: vol, MountPath: path} }
	dataID := fakecri.New().AddImage(data)
	dataMount := func(path, subPath string) *runtimeapi.Mount {
		return &runtimeapi.Mount{ContainerPath: path, Image: &runtimeapi.ImageSpec{Image: dataID, UserSpecifiedImage: data},
			ImageSubPath: subPath, Readonly: true}
	}
	for _, tc := range []struct {
		name        string
		present     []string // images the runtime holds before the pass
		volumes     []v1.Volume
		containers  []v1.Container
		wantPulls   []string
		wantMounts  map[string][]*runtimeapi.Mount // of the containers created
		wantWaiting map[string]string              // container: reason
		wantEvents  []string                       // in this order, among others
	}{
		{
			name:       "IfNotPresent, present: no pull",
			present:    []string{data},
			volumes:    []v1.Volume{imageVol("data", data, v1.PullIfNotPresent)},
			containers: []v1.Container{container("c", at("data", "/vol"))},
			wantMounts: map[string][]*runtimeapi.Mount{"c": {dataMount("/vol", "")}},
			wantEvents: []string{`Normal Pulled Container image "` + data + `" already present on machine`, "Normal Created .*", "Normal Started .*"},
		},
		{
			name:       "Always: pulled before the containers, mounted where each asks",
			present:    []string{data},
			volumes:    []v1.Volume{imageVol("data", data, v1.PullAlways)},
			containers: []v1.Container{container("c", at("data", "/vol")), container("d", v1.VolumeMount{Name: "data", MountPath: "/etc/x", SubPath: "etc", ReadOnly: false})},
			wantPulls:  []string{data},
			wantMounts: map[string][]*runtimeapi.Mount{"c": {dataMount("/vol", "")}, "d": {dataMount("/etc/x", "etc")}},
			wantEvents: []string{`Normal Pulling Pulling image "` + data + `"`, `Normal Pulled Successfully pulled image "` + data + `" in .*`},
		},
		{
			name:       "defaulted: a :latest image is pulled always",
			present:    []string{"registry.test/data:latest"},
			volumes:    []v1.Volume{imageVol("data", "registry.test/data:latest", "")},
			containers: []v1.Container{container("c")},
			wantPulls:  []string{"registry.test/data:latest"},
			wantMounts: map[string][]*runtimeapi.Mount{"c": nil},
		},
		{
			name:        "Never, absent: the container waits ErrImageNeverPull",
			volumes:     []v1.Volume{imageVol("data", data, v1.PullNever)},
			containers:  []v1.Container{container("c", at("data", "/vol"))},
			wantWaiting: map[string]string{"c": ReasonErrImageNeverPull},
			wantEvents:  []string{`Warning ErrImageNeverPull Container image "` + data + `" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull"},
		},
		{
			name:        "a failed pull holds back the containers that mount it, only",
			volumes:     []v1.Volume{imageVol("gone", missing, v1.PullIfNotPresent)},
			containers:  []v1.Container{container("c", at("gone", "/vol")), container("d")},
			wantPulls:   []string{missing},
			wantMounts:  map[string][]*runtimeapi.Mount{"d": nil},
			wantWaiting: map[string]string{"c": ReasonErrImagePull},
			wantEvents:  []string{`Warning Failed Failed to pull image "` + missing + `": .*not found`, "Warning Failed Error: ErrImagePull"},
		},
		{
			name:       "a volume no container mounts is pulled, and its failure stops nothing",
			volumes:    []v1.Volume{imageVol("gone", missing, v1.PullIfNotPresent)},
			containers: []v1.Container{container("c")},
			wantPulls:  []string{missing},
			wantMounts: map[string][]*runtimeapi.Mount{"c": nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cri := &registry{Runtime: fakecri.New(), missing: map[string]bool{missing: true}, mounts: map[string][]*runtimeapi.Mount{}}
			cri.AddImage(app)
			for _, img := range tc.present {
				cri.AddImage(img)
			}
			rec := record.NewFakeRecorder(100)
			rt := &Runtime{RT: cri, Img: cri, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", Recorder: rec,
				NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second}}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
				Spec: v1.PodSpec{NodeName: "node", Volumes: tc.volumes, Containers: tc.containers}}
			vols := map[string]volume.Mounted{}
			for _, v := range tc.volumes {
				vols[v.Name] = volume.Mounted{Name: v.Name, Image: v.Image.Reference, ReadOnly: true}
			}
			res := rt.SyncPod(context.Background(), pod, vols, NewCrashLoopBackoff(0, nil), nil)

			if !slices.Equal(cri.pulls, tc.wantPulls) {
				t.Errorf("pulls %q, want %q", cri.pulls, tc.wantPulls)
			}
			if !mountsEqual(cri.mounts, nonNil(tc.wantMounts)) {
				t.Errorf("image mounts of the containers created:\n got %v\nwant %v", cri.mounts, tc.wantMounts)
			}
			waiting := map[string]string{}
			for _, cs := range res.APIStatus.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason != ReasonContainerCreating {
					waiting[cs.Name] = w.Reason
				}
			}
			if !reflect.DeepEqual(waiting, nonNil(tc.wantWaiting)) {
				t.Errorf("waiting %v, want %v", waiting, tc.wantWaiting)
			}
			if (res.Err != nil) != (len(tc.wantWaiting) > 0) {
				t.Errorf("the pass's error: %v", res.Err)
			}
			if vols[tc.volumes[0].Name].ImageRef != "" {
				t.Error("the pass changed the volumes it was given")
			}
			expectEventsAmong(t, rec, tc.wantEvents...)
		})
	}
}

// TestImageVolumePullBackOff: a volume's failed pull backs off as a
// container image's does: the next pass does not pull and the container
// waits ImagePullBackOff until the backoff expires.
func TestImageVolumePullBackOff(t *testing.T) {
	const missing = "registry.test/missing:1"
	cri := &registry{Runtime: fakecri.New(), missing: map[string]bool{missing: true}, mounts: map[string][]*runtimeapi.Mount{}}
	cri.AddImage("registry.test/app:1")
	rec := record.NewFakeRecorder(100)
	rt := &Runtime{RT: cri, Img: cri, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", Recorder: rec,
		NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second, PullBackoff: NewImagePullBackoff(nil)}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{NodeName: "node",
			Volumes: []v1.Volume{{Name: "gone", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: missing, PullPolicy: v1.PullIfNotPresent}}}},
			Containers: []v1.Container{{Name: "c", Image: "registry.test/app:1", ImagePullPolicy: v1.PullIfNotPresent,
				VolumeMounts: []v1.VolumeMount{{Name: "gone", MountPath: "/vol"}}}}}}
	vols := map[string]volume.Mounted{"gone": {Name: "gone", Image: missing, ReadOnly: true}}
	backoff := NewCrashLoopBackoff(0, nil)
	for i, want := range []string{ReasonErrImagePull, ReasonImagePullBackOff} {
		res := rt.SyncPod(context.Background(), pod, vols, backoff, nil)
		w := res.APIStatus.ContainerStatuses[0].State.Waiting
		if w == nil || w.Reason != want {
			t.Fatalf("pass %d: container %+v, want waiting %s", i, res.APIStatus.ContainerStatuses[0].State, want)
		}
		if res.RetryAfter <= 0 {
			t.Errorf("pass %d: no retry asked", i)
		}
	}
	if len(cri.pulls) != 1 {
		t.Errorf("pulls %q, want one: the second pass backs off", cri.pulls)
	}
	expectEventsAmong(t, rec, `Warning Failed Failed to pull image .*`, "Warning Failed Error: ErrImagePull",
		`Normal BackOff Back-off pulling image "`+regexp.QuoteMeta(missing)+`"`, "Warning Failed Error: ImagePullBackOff")
}

// expectEventsAmong checks that the recorder's events include want (each
// a regular expression matching a whole event), in that order.
func expectEventsAmong(t *testing.T, rec *record.FakeRecorder, want ...string) {
	t.Helper()
	var got []string
	for done := false; !done; {
		select {
		case ev := <-rec.Events:
			got = append(got, ev)
		default:
			done = true
		}
	}
	i := 0
	for _, ev := range got {
		if i < len(want) && regexp.MustCompile("^"+want[i]+"$").MatchString(ev) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("events %q\nwant among them, in order, %q", got, want)
	}
}

func mountsEqual(a, b map[string][]*runtimeapi.Mount) bool {
	return maps.EqualFunc(a, b, func(x, y []*runtimeapi.Mount) bool {
		return slices.EqualFunc(x, y, func(m, n *runtimeapi.Mount) bool { return proto.Equal(m, n) })
	})
}

func nonNil[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// TestImageVolumePullSecrets: a volume's image is pulled with the pod's
// pull secrets, as a container's image.
func TestImageVolumePullSecrets(t *testing.T) {
	img := &authRegistry{Runtime: fakecri.New()}
	rec := record.NewFakeRecorder(20)
	r := &Runtime{Img: img, Opts: Options{Recorder: rec, Objects: secretObjects{"ns/s": configJSON("s", "registry.example.com:5000", goodPassword)}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid"},
		Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "s"}},
			Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: privateImage, PullPolicy: v1.PullAlways}}}}}}
	out := r.ensureVolumeImage(context.Background(), pod, &pod.Spec.Volumes[0], nil, NewCrashLoopBackoff(0, nil))
	if out.err != nil || out.ref == "" {
		t.Fatalf("not pulled: %v", out.err)
	}
	if want := []*runtimeapi.AuthConfig{{Username: "user", Password: goodPassword}}; len(img.pulls) != 1 || !proto.Equal(img.pulls[0], want[0]) {
		t.Errorf("pulls with %v, want %v", img.pulls, want)
	}
	expectEvents(t, rec, "Normal Pulling .*", "Normal Pulled Successfully pulled .*")
}
