package statusreporter

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// volumeManager answers VolumesInUseRequest with names and keeps each
// VolumesReportedInUse it is sent.
type volumeManager struct {
	mu       sync.Mutex
	names    []v1.UniqueVolumeName
	reported chan []v1.UniqueVolumeName
}

func (v *volumeManager) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.VolumesInUseRequest:
		v.mu.Lock()
		defer v.mu.Unlock()
		ctx.Respond(&messages.VolumesInUse{Names: v.names})
	case *messages.VolumesReportedInUse:
		v.reported <- m.Names
	}
}

// TestVolumesReportedInUse: after each node status update the
// volume-manager learns what the Node lists in use; asked
// (VolumesInUseChanged), the status-reporter updates the node status then
// rather than at its period, so that a set-up waiting for the listing goes
// on.
func TestVolumesReportedInUse(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	vm := &volumeManager{reported: make(chan []v1.UniqueVolumeName, 100)}
	vmPID, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return vm }), "vm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &kubeletconfigv1beta1.KubeletConfiguration{
		NodeStatusUpdateFrequency: metav1.Duration{Duration: time.Hour}, NodeStatusReportFrequency: metav1.Duration{Duration: time.Hour},
		NodeLeaseDurationSeconds: 40,
	}
	sr, err := system.Root.SpawnNamed(actor.PropsFromProducer(New(Params{
		Kube: fake.NewClientset(), NodeName: "n1", Config: cfg, RootDir: t.TempDir(), VolumeManager: vmPID, Log: zerolog.Nop(),
	})), "sr")
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, want []v1.UniqueVolumeName) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case got := <-vm.reported:
				if len(got) == len(want) && (len(want) == 0 || got[0] == want[0]) {
					return
				}
			case <-deadline:
				t.Fatalf("no VolumesReportedInUse %s", what)
			}
		}
	}
	waitFor("after the first update", nil)

	const name = v1.UniqueVolumeName("kubernetes.io/csi/d^h")
	vm.mu.Lock()
	vm.names = []v1.UniqueVolumeName{name}
	vm.mu.Unlock()
	supervision.TellFromOutside(system.ActorSystem, sr, &messages.VolumesInUseChanged{})
	waitFor("listing the volume, asked for", []v1.UniqueVolumeName{name})
}
