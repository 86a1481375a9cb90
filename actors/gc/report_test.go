package gc

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// fakeImages is an ImageServiceClient over a fixed image list, whose image
// filesystem is the directory fs.
type fakeImages struct {
	runtimeapi.ImageServiceClient
	mu      sync.Mutex
	images  []*runtimeapi.Image
	fs      string
	removed []string
}

func (f *fakeImages) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListImagesResponse{Images: slices.Clone(f.images)}, nil
}

func (f *fakeImages) RemoveImage(_ context.Context, r *runtimeapi.RemoveImageRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, r.Image.Image)
	f.images = slices.DeleteFunc(f.images, func(i *runtimeapi.Image) bool { return i.Id == r.Image.Image })
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (f *fakeImages) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.fs}}}}, nil
}

func (f *fakeImages) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// metricValue is the value of the counter or gauge name{labels} on
// metrics.Registry, 0 when it has no such series yet.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return 0
}

// nextEvent waits for the recorder's next event and matches it against the
// regular expression want ("TYPE REASON MESSAGE").
func nextEvent(t *testing.T, rec *record.FakeRecorder, want string) {
	t.Helper()
	select {
	case got := <-rec.Events:
		if !regexp.MustCompile("^" + want + "$").MatchString(got) {
			t.Errorf("event %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event, want %q", want)
	}
}

func noMoreEvents(t *testing.T, rec *record.FakeRecorder) {
	t.Helper()
	select {
	case got := <-rec.Events:
		t.Errorf("unexpected event %q", got)
	default:
	}
}

// spawn runs the gc actor on a registry, as bootstrap does, with a
// pod-manager that knows no pod and whose sources are ready.
func spawn(t *testing.T, p Params) (*actor.PID, *supervision.Registry) {
	t.Helper()
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	p.PodManager = system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.ListPods); ok {
			c.Respond(&messages.PodList{SourcesReady: true})
		}
	}))
	reg := supervision.NewRegistry()
	// Never the machine's /var/log/pods: the fake runtime holds no pod.
	p.Registry, p.Log, p.PodLogsDir = reg, zerolog.New(zerolog.NewTestWriter(t)), t.TempDir()
	return system.Root.Spawn(reg.Props(Kind, New(p), nil)), reg
}

func TestContainerGCFailedIsAnEvent(t *testing.T) {
	rt := &fakeRuntime{listErr: errors.New("runtime down")}
	rec := record.NewFakeRecorder(10)
	spawn(t, Params{Runtime: rt, Events: rec, NodeName: "node-a", ContainerGCPeriod: time.Hour, ImageGCPeriod: time.Hour})
	nextEvent(t, rec, "Warning ContainerGCFailed list containers: runtime down")
	noMoreEvents(t, rec)
}

// TestImageGCEventsMetricsAndState: a threshold that cannot be met removes
// every unused image (never the one in use or the sandbox image), counts
// them in the metrics, and reports FreeDiskSpaceFailed on every pass and
// ImageGCFailed from the second failing pass on; the dashboard shows the
// last passes.
func TestImageGCEventsMetricsAndState(t *testing.T) {
	const mib = 1 << 20
	rt, img, cfg := threeImages(t, 1, 0)
	rec := record.NewFakeRecorder(10)
	space := map[string]string{"reason": reasonSpace}
	removedBefore := metricValue(t, "kubelet_image_garbage_collected_total", space)
	bytesBefore := metricValue(t, "actorlet_gc_image_bytes_freed_total", nil)

	pid, reg := spawn(t, Params{Runtime: rt, Images: img, Config: cfg, Events: rec, NodeName: "node-a",
		ContainerGCPeriod: time.Hour, ImageGCPeriod: 100 * time.Millisecond})
	insufficient := `Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem \(\d+% of [0-9.]+ [KMGT]iB used\)\. ` +
		`Failed to free sufficient space by deleting unused images \(freed %s bytes\)\. Investigate disk usage, as it could be used by active images, logs, volumes, or other data\.`
	nextEvent(t, rec, strings.Replace(insufficient, "%s", "3145728", 1))
	nextEvent(t, rec, strings.Replace(insufficient, "%s", "0", 1))
	nextEvent(t, rec, "Warning ImageGCFailed Insufficient free disk space .*")

	if got := img.removedIDs(); !slices.Equal(got, []string{"sha256:old"}) {
		t.Errorf("removed %v, want only the unused image (never the one in use or the sandbox image)", got)
	}
	if d := metricValue(t, "kubelet_image_garbage_collected_total", space) - removedBefore; d != 1 {
		t.Errorf("kubelet_image_garbage_collected_total{reason=space} grew by %v, want 1", d)
	}
	if d := metricValue(t, "actorlet_gc_image_bytes_freed_total", nil) - bytesBefore; d != 3*mib {
		t.Errorf("actorlet_gc_image_bytes_freed_total grew by %v, want %d", d, 3*mib)
	}
	info, ok := reg.Actor(pid.Id)
	if !ok || !regexp.MustCompile(`^container \d\d:\d\d:\d\d: 0 containers, 0 sandboxes, 0 pod log dirs removed in [^;]+; `+
		`image \d\d:\d\d:\d\d: \d images removed, [^;]+ freed in [^;]+, 1 errors$`).MatchString(info.State) {
		t.Errorf("dashboard state %q", info.State)
	}
}

// TestImageGCKeepsMountedImages: an image that a container mounts as an
// image volume is in use, as upstream's handleImageVolumes finds it in the
// container's status: image GC never removes it.
func TestImageGCKeepsMountedImages(t *testing.T) {
	rt, img, cfg := threeImages(t, 1, 0)
	rt.mounts = map[string][]*runtimeapi.Mount{"c": {{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: "sha256:old"}, Readonly: true}}}
	rec := record.NewFakeRecorder(10)
	spawn(t, Params{Runtime: rt, Images: img, Config: cfg, Events: rec, NodeName: "node-a",
		ContainerGCPeriod: time.Hour, ImageGCPeriod: time.Hour})
	nextEvent(t, rec, `Warning FreeDiskSpaceFailed .*\(freed 0 bytes\)\..*`)
	if got := img.removedIDs(); len(got) != 0 {
		t.Errorf("removed %v, want nothing: every image is in use, mounted or run, or the sandbox image", got)
	}
}

// threeImages is a node for image GC: its runtime runs busybox:1 (container
// c); its image store holds busybox (2 MiB, in use), the sandbox image
// (1 MiB) and example/old (3 MiB, unused); its configuration sets image GC
// to the thresholds high and low (percent), with no minimum age.
func threeImages(t *testing.T, high, low int32) (*fakeRuntime, *fakeImages, *kubeletconfigv1beta1.KubeletConfiguration) {
	const mib = 1 << 20
	rt := &fakeRuntime{containers: []*runtimeapi.Container{{Id: "c", State: running, Image: &runtimeapi.ImageSpec{Image: "busybox:1"}}}}
	img := &fakeImages{fs: t.TempDir(), images: []*runtimeapi.Image{
		image("sha256:busybox", 2*mib, "busybox:1"),
		image("sha256:pause", 1*mib, "registry.k8s.io/pause:3.10"),
		image("sha256:old", 3*mib, "example/old:1"),
	}}
	cfg := &kubeletconfigv1beta1.KubeletConfiguration{ImageGCHighThresholdPercent: &high, ImageGCLowThresholdPercent: &low,
		ImageMinimumGCAge: metav1.Duration{Duration: time.Nanosecond}}
	return rt, img, cfg
}
