package volume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/mount-utils"

	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
)

const testDriver = "fake.csi.example.com"

// csiSources adds CSIDriver and VolumeAttachment objects, and secrets,
// to claimSources.
type csiSources struct {
	claimSources
	drivers map[string]*storagev1.CSIDriver
	vas     map[string]*storagev1.VolumeAttachment
	secrets map[string]*v1.Secret
	// patches are the claim status patches applied, in order.
	patches []string
	// tokenErr fails every token request.
	tokenErr error
}

func (s *csiSources) CSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	if d, ok := s.drivers[name]; ok {
		return d, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "csidrivers"}, name)
}

func (s *csiSources) VolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	if va, ok := s.vas[name]; ok {
		return va, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "volumeattachments"}, name)
}

func (s *csiSources) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if sec, ok := s.secrets[ns+"/"+name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

// ServiceAccountToken gives a token named after the pod, its service
// account and the audience, or tokenErr.
func (s *csiSources) ServiceAccountToken(_ context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (authenticationv1.TokenRequestStatus, error) {
	if s.tokenErr != nil {
		return authenticationv1.TokenRequestStatus{}, s.tokenErr
	}
	exp := int64(3600)
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	return authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("%s.%s.%s", pod.UID, pod.Spec.ServiceAccountName, p.Audience),
		ExpirationTimestamp: metav1.NewTime(time.Unix(exp, 0).UTC())}, nil
}

// csiFixture is a host with the fake driver registered and serving.
type csiFixture struct {
	h       *Host
	plugin  *fakeplugin.Plugin
	src     *csiSources
	backing string
}

func newCSIFixture(t *testing.T, stage bool, configure ...func(*fakeplugin.Plugin)) *csiFixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the fake CSI driver bind-mounts: needs root")
	}
	root := t.TempDir()
	sock := t.TempDir()
	backing := t.TempDir()
	plugin := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: testDriver, Versions: []string{"1.0.0"},
		NodeID: "n", BackingDir: backing, StageUnstage: stage}
	for _, c := range configure {
		c(plugin) // before it serves: its handlers read it
	}
	plugin.Serve(t, filepath.Join(sock, "reg.sock"), filepath.Join(sock, "csi.sock"))
	reg := registry.New()
	reg.Set(registry.Driver{Name: testDriver, Endpoint: plugin.Endpoint, HighestVersion: "1.0.0"})
	src := &csiSources{
		claimSources: claimSources{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}},
		drivers:      map[string]*storagev1.CSIDriver{}, vas: map[string]*storagev1.VolumeAttachment{}, secrets: map[string]*v1.Secret{},
	}
	h := &Host{RootDir: root, NodeName: "node-a", Sources: src, Mounter: mount.New(""), CSIDrivers: reg}
	t.Cleanup(func() {
		// Whatever a failed test left mounted under its directories.
		for _, dir := range []string{root, backing} {
			mps, _ := h.Mounter.List()
			for i := len(mps) - 1; i >= 0; i-- {
				if strings.HasPrefix(mps[i].Path, dir+"/") {
					_ = h.Mounter.Unmount(mps[i].Path)
				}
			}
		}
	})
	return &csiFixture{h: h, plugin: plugin, src: src, backing: backing}
}

// claimed binds claim "data" in ns to a CSI PV of the fake driver.
func (f *csiFixture) claimed(handle string, mutate func(*v1.PersistentVolume)) *v1.Volume {
	f.src.pvcs["ns/data"] = boundClaim("data", "pv-"+handle)
	pv := pvFor("pv-"+handle, "data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: handle}})
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	if mutate != nil {
		mutate(pv)
	}
	f.src.pvs[pv.Name] = pv
	return &v1.Volume{Name: "vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
}

func (f *csiFixture) driverObject(attach bool, modes ...storagev1.VolumeLifecycleMode) {
	pol := storagev1.FileFSGroupPolicy
	f.src.drivers[testDriver] = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: testDriver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &attach, PodInfoOnMount: ptr(true), FSGroupPolicy: &pol, VolumeLifecycleModes: modes}}
}

func methods(calls []fakeplugin.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

func csiPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}}
}

// TestCSIStagePublishTearDown: two pods of one CSI PV: one stage, a
// publish each that containers see as the driver's directory; the first
// pod's teardown unpublishes, the last one's also unstages; nothing stays
// mounted or behind.
func TestCSIStagePublishTearDown(t *testing.T) {
	f := newCSIFixture(t, true)
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	f.src.secrets["ns/stage"] = &v1.Secret{Data: map[string][]byte{"user": []byte("u")}}
	vol := f.claimed("vol-1", func(pv *v1.PersistentVolume) {
		pv.Spec.CSI.NodeStageSecretRef = &v1.SecretReference{Namespace: "ns", Name: "stage"}
		pv.Spec.MountOptions = []string{"noatime"}
	})
	a, b := csiPod("a"), csiPod("b")
	ma, err := f.h.SetUp(t.Context(), a, vol)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := f.h.SetUp(t.Context(), b, vol)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(f.h.RootDir, "pods/a/volumes/kubernetes.io~csi/pv-vol-1/mount")
	if ma.Path != want || ma.UniqueName != "" || !ma.SELinuxRelabel {
		t.Fatalf("mounted %+v, want path %s, no unique name (no attach)", ma, want)
	}
	if err := os.WriteFile(filepath.Join(ma.Path, "hello"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(f.backing, "vol-1", "hello")); err != nil || string(b) != "hi" {
		t.Fatalf("the driver's directory has %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(mb.Path, "hello")); err != nil {
		t.Fatalf("the second pod does not see the file: %v", err)
	}
	// Set up again (a refresh): nothing is called again.
	if _, err := f.h.SetUp(t.Context(), a, vol); err != nil {
		t.Fatal(err)
	}
	calls := f.plugin.Calls()
	if got := methods(calls); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume"}) {
		t.Fatalf("calls %v", got)
	}
	staging := filepath.Join(csiGlobalDir(f.h.RootDir, testDriver, "vol-1"), "globalmount")
	if calls[0].Path != staging || calls[0].Secrets["user"] != "u" || calls[1].StagingPath != staging ||
		calls[1].VolumeContext["csi.storage.k8s.io/pod.name"] != "p-a" || calls[2].VolumeContext["csi.storage.k8s.io/pod.uid"] != "b" ||
		!slices.Equal(calls[1].Capability.GetMount().GetMountFlags(), []string{"noatime"}) {
		t.Fatalf("calls %+v", calls)
	}
	var data map[string]string
	if raw, err := os.ReadFile(filepath.Join(filepath.Dir(ma.Path), "vol_data.json")); err != nil || json.Unmarshal(raw, &data) != nil {
		t.Fatalf("vol_data.json: %s %v", raw, err)
	}
	if data["volumeHandle"] != "vol-1" || data["driverName"] != testDriver || data["specVolID"] != "pv-vol-1" ||
		data["volumeLifecycleMode"] != "Persistent" || data["attachmentID"] != csiAttachmentName("vol-1", testDriver, "node-a") {
		t.Fatalf("vol_data.json %v", data)
	}

	if err := f.h.TearDownPod("a"); err != nil {
		t.Fatal(err)
	}
	if got := methods(f.plugin.Calls()[3:]); !slices.Equal(got, []string{"NodeUnpublishVolume"}) {
		t.Fatalf("first teardown calls %v, want only an unpublish", got)
	}
	if err := f.h.TearDownPod("b"); err != nil {
		t.Fatal(err)
	}
	if got := methods(f.plugin.Calls()[4:]); !slices.Equal(got, []string{"NodeUnpublishVolume", "NodeUnstageVolume"}) {
		t.Fatalf("last teardown calls %v, want an unpublish and the unstage", got)
	}
	for _, p := range []string{PodDir(f.h.RootDir, "a"), PodDir(f.h.RootDir, "b"), filepath.Dir(staging)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s stays: %v", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.backing, "vol-1", "hello")); err != nil || string(b) != "hi" {
		t.Fatalf("the driver's data is gone: %q, %v", b, err)
	}
}

// TestCSISetUpWaits: the cases where the pod waits, with upstream's
// reasons, and what it is given once it may go.
func TestCSISetUpWaits(t *testing.T) {
	f := newCSIFixture(t, false)
	vol := f.claimed("vol-2", nil)
	pod := csiPod("w")

	// No CSIDriver object: attach required by default, and no attachment.
	_, err := f.h.SetUp(t.Context(), pod, vol)
	vaName := csiAttachmentName("vol-2", testDriver, "node-a")
	if err == nil || !strings.Contains(err.Error(), "waiting for VolumeAttachment "+vaName) {
		t.Fatalf("error %v, want a wait for the attachment", err)
	}
	f.src.vas[vaName] = &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: vaName}}
	if _, err := f.h.SetUp(t.Context(), pod, vol); err == nil || !strings.Contains(err.Error(), "not attached") {
		t.Fatalf("error %v, want a wait for the attachment", err)
	}
	f.src.vas[vaName].Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"device": "/dev/x"}}
	m, err := f.h.SetUp(t.Context(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	if m.UniqueName != "kubernetes.io/csi/"+testDriver+"^vol-2" {
		t.Fatalf("unique name %q", m.UniqueName)
	}
	calls := f.plugin.Calls()
	if got := methods(calls); !slices.Equal(got, []string{"NodePublishVolume"}) || calls[0].PublishContext["device"] != "/dev/x" || calls[0].StagingPath != "" {
		t.Fatalf("calls %+v: want one publish with the attachment's context and no staging", calls)
	}
	if err := f.h.TearDownPod("w"); err != nil {
		t.Fatal(err)
	}

	// The driver gone: upstream's error, for set-up and teardown alike.
	f.h.CSIDrivers.(*registry.Registry).Delete(testDriver)
	if _, err := f.h.SetUp(t.Context(), csiPod("x"), vol); err == nil ||
		!strings.Contains(err.Error(), "driver name "+testDriver+" not found in the list of registered CSI drivers") {
		t.Fatalf("error %v", err)
	}
}

// TestCSIWaitsForInUse: with an InUse, an attachable volume is named and
// goes no further (no attachment read, no driver call) until the Node
// lists it in use; a volume that needs no attach does not wait.
func TestCSIWaitsForInUse(t *testing.T) {
	f := newCSIFixture(t, false)
	vol := f.claimed("vol-2", nil)
	pod := csiPod("w")
	name := v1.UniqueVolumeName("kubernetes.io/csi/" + testDriver + "^vol-2")
	vaName := csiAttachmentName("vol-2", testDriver, "node-a")
	f.src.vas[vaName] = &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: vaName},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}

	iu := &InUse{}
	_, err := f.h.SetUp(WithInUse(t.Context(), iu), pod, vol)
	var nie *NotInUseError
	if !errors.As(err, &nie) || nie.Name != name || !strings.Contains(err.Error(), "Volume has not been added to the list of VolumesInUse in the node's volume status") {
		t.Fatalf("error %v, want upstream's wait for the listing of %s", err, name)
	}
	if !slices.Equal(iu.Wanted, []v1.UniqueVolumeName{name}) {
		t.Fatalf("wanted %v, want [%s]", iu.Wanted, name)
	}
	if calls := f.plugin.Calls(); len(calls) != 0 {
		t.Fatalf("driver called before the listing: %+v", calls)
	}

	iu = &InUse{Reported: map[v1.UniqueVolumeName]bool{name: true}}
	if m, err := f.h.SetUp(WithInUse(t.Context(), iu), pod, vol); err != nil || m.UniqueName != string(name) {
		t.Fatalf("listed: %+v, %v", m, err)
	}
	if err := f.h.TearDownPod("w"); err != nil {
		t.Fatal(err)
	}

	// No attach: nothing to wait for, nothing listed.
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	iu = &InUse{}
	if _, err := f.h.SetUp(WithInUse(t.Context(), iu), csiPod("x"), vol); err != nil || len(iu.Wanted) != 0 {
		t.Fatalf("without attach: %v, wanted %v", err, iu.Wanted)
	}
}

// TestCSIInline: an inline volume needs Ephemeral among the driver's
// modes; it is published, never staged, with its own handle.
func TestCSIInline(t *testing.T) {
	f := newCSIFixture(t, true)
	pod := csiPod("i")
	vol := &v1.Volume{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver,
		VolumeAttributes: map[string]string{"size": "1"}}}}
	if _, err := f.h.SetUp(t.Context(), pod, vol); err == nil || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver `+testDriver+" (no CSIDriver object)") {
		t.Fatalf("error %v", err)
	}
	f.driverObject(true, storagev1.VolumeLifecyclePersistent)
	if _, err := f.h.SetUp(t.Context(), pod, vol); err == nil || !strings.Contains(err.Error(), `(only supports ["Persistent"])`) {
		t.Fatalf("error %v", err)
	}
	f.driverObject(true, storagev1.VolumeLifecycleEphemeral)
	m, err := f.h.SetUp(t.Context(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.plugin.Calls()
	if got := methods(calls); !slices.Equal(got, []string{"NodePublishVolume"}) || calls[0].VolumeID != ephemeralVolumeHandle("i", "inline") ||
		calls[0].VolumeContext["csi.storage.k8s.io/ephemeral"] != "true" || calls[0].VolumeContext["size"] != "1" || m.UniqueName != "" {
		t.Fatalf("calls %+v, mounted %+v", calls, m)
	}
	if err := f.h.TearDownPod("i"); err != nil {
		t.Fatal(err)
	}
	if got := methods(f.plugin.Calls()); !slices.Equal(got, []string{"NodePublishVolume", "NodeUnpublishVolume"}) {
		t.Fatalf("calls %v", got)
	}
}

// TestCSIHungPublish: a driver that never answers NodePublishVolume costs
// its caller its context's time and no more; another volume of the
// driver is published meanwhile; the hung volume's pod is torn down.
func TestCSIHungPublish(t *testing.T) {
	f := newCSIFixture(t, false)
	f.driverObject(false, storagev1.VolumeLifecycleEphemeral)
	hung := &v1.Volume{Name: "hung", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver}}}
	f.plugin.HangPublish(ephemeralVolumeHandle("h", "hung"))
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	go func() {
		_, err := f.h.SetUp(ctx, csiPod("h"), hung)
		done <- err
	}()
	ok := &v1.Volume{Name: "ok", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver}}}
	if _, err := f.h.SetUp(t.Context(), csiPod("o"), ok); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the hung publish returned before its deadline: %v", err)
	default:
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Fatalf("error %v, want the deadline", err)
	}
	if err := f.h.TearDownPod("h"); err != nil {
		t.Fatal(err)
	}
	if err := f.h.TearDownPod("o"); err != nil {
		t.Fatal(err)
	}
}

// TestCSITearDownKeepsWhatItCannot: with the driver unregistered the
// pod's CSI volume stays, mounted and with its vol_data.json; the
// driver back, the next teardown ends it.
func TestCSITearDownKeepsWhatItCannot(t *testing.T) {
	f := newCSIFixture(t, false)
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	m, err := f.h.SetUp(t.Context(), csiPod("k"), f.claimed("vol-3", nil))
	if err != nil {
		t.Fatal(err)
	}
	reg := f.h.CSIDrivers.(*registry.Registry)
	d, _ := reg.Driver(testDriver)
	reg.Delete(testDriver)
	if err := f.h.TearDownPod("k"); err == nil || !strings.Contains(err.Error(), "not found in the list of registered CSI drivers") {
		t.Fatalf("error %v", err)
	}
	if isMnt, err := f.h.Mounter.IsMountPoint(m.Path); err != nil || !isMnt {
		t.Fatalf("the target is no longer mounted: %v %v", isMnt, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(m.Path), "vol_data.json")); err != nil {
		t.Fatal(err)
	}
	reg.Set(d)
	if err := f.h.TearDownPod("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PodDir(f.h.RootDir, "k")); !os.IsNotExist(err) {
		t.Fatalf("pod directory stays: %v", err)
	}
}

// TestCSITearDownAfterRestart: a Host of a new process, which staged and
// published nothing itself, tears down what the disk says.
func TestCSITearDownAfterRestart(t *testing.T) {
	f := newCSIFixture(t, true)
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	m, err := f.h.SetUp(t.Context(), csiPod("r"), f.claimed("vol-4", nil))
	if err != nil {
		t.Fatal(err)
	}
	restarted := &Host{RootDir: f.h.RootDir, NodeName: f.h.NodeName, Sources: f.src, Mounter: f.h.Mounter, CSIDrivers: f.h.CSIDrivers}
	if err := restarted.TearDownPod("r"); err != nil {
		t.Fatal(err)
	}
	calls := f.plugin.Calls()
	if got := methods(calls); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}) ||
		calls[2].Path != m.Path || calls[3].Path != calls[0].Path {
		t.Fatalf("calls %+v", calls)
	}
	if _, err := os.Stat(csiGlobalDir(f.h.RootDir, testDriver, "vol-4")); !os.IsNotExist(err) {
		t.Fatalf("global directory stays: %v", err)
	}
}

// TestCSIFSGroup: with fsGroupPolicy File and no VOLUME_MOUNT_GROUP the
// published volume is given to the pod's fsGroup; a driver with the
// capability is given it as volume_mount_group instead, and nothing is
// walked.
func TestCSIFSGroup(t *testing.T) {
	for _, mountGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("VOLUME_MOUNT_GROUP=%v", mountGroup), func(t *testing.T) {
			f := newCSIFixture(t, false, func(p *fakeplugin.Plugin) { p.VolumeMountGroup = mountGroup })
			f.driverObject(false, storagev1.VolumeLifecycleEphemeral)
			pod := csiPod("g")
			pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(2345))}
			vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver}}}
			m, err := f.h.SetUp(t.Context(), pod, vol)
			if err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Stat(m.Path, &st); err != nil {
				t.Fatal(err)
			}
			calls := f.plugin.Calls()
			got := calls[0].Capability.GetMount().GetVolumeMountGroup()
			if mountGroup && (got != "2345" || st.Gid == 2345) || !mountGroup && (got != "" || st.Gid != 2345) {
				t.Fatalf("volume_mount_group %q, the target's group %d", got, st.Gid)
			}
			if err := f.h.TearDownPod("g"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCSITokenRequests: a driver whose CSIDriver asks for tokens gets, at
// each publish, one of the pod's service account per audience (its
// lifetime as asked), in the volume context or in the secrets as it says;
// with requiresRepublish every set-up publishes again; a token that
// cannot be had fails the set-up before any publish.
func TestCSITokenRequests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inSecrets bool
		republish bool
		tokenErr  error
		wantErr   string
	}{
		{name: "in the volume context, republished", republish: true},
		{name: "in the secrets", inSecrets: true},
		{name: "no token", tokenErr: errors.New("serviceaccounts \"sa\" not found"),
			wantErr: `kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: serviceaccounts "sa" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCSIFixture(t, false)
			f.driverObject(false, storagev1.VolumeLifecycleEphemeral)
			spec := &f.src.drivers[testDriver].Spec
			spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "", ExpirationSeconds: ptr(int64(600))}}
			spec.ServiceAccountTokenInSecrets, spec.RequiresRepublish = ptr(tc.inSecrets), ptr(tc.republish)
			f.src.tokenErr = tc.tokenErr
			pod := csiPod("t")
			pod.Spec.ServiceAccountName = "sa"
			vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: testDriver}}}
			m, err := f.h.SetUp(t.Context(), pod, vol)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(f.plugin.Calls()) != 0 {
					t.Fatalf("error %v, calls %v; want %q before any call", err, methods(f.plugin.Calls()), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.h.TearDownPod("t") })
			if m.CSIRepublish != tc.republish {
				t.Errorf("mounted %+v, want CSIRepublish %v", m, tc.republish)
			}
			call := f.plugin.Calls()[0]
			where, other := call.VolumeContext, call.Secrets
			if tc.inSecrets {
				where, other = call.Secrets, call.VolumeContext
			}
			var tokens map[string]authenticationv1.TokenRequestStatus
			if err := json.Unmarshal([]byte(where["csi.storage.k8s.io/serviceAccount.tokens"]), &tokens); err != nil {
				t.Fatalf("tokens %q: %v", where["csi.storage.k8s.io/serviceAccount.tokens"], err)
			}
			if len(tokens) != 2 || tokens["vault"].Token != "t.sa.vault" || tokens[""].Token != "t.sa." ||
				tokens[""].ExpirationTimestamp.Unix() != 600 || tokens["vault"].ExpirationTimestamp.Unix() != 3600 {
				t.Errorf("tokens %+v", tokens)
			}
			if _, ok := other["csi.storage.k8s.io/serviceAccount.tokens"]; ok {
				t.Errorf("tokens in both the volume context and the secrets")
			}
			if _, err := f.h.SetUp(t.Context(), pod, vol); err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.republish {
				want = 2
			}
			if got := count(f.plugin.Calls(), "NodePublishVolume"); got != want {
				t.Errorf("%d publishes after two set-ups, want %d", got, want)
			}
		})
	}
}

func count(calls []fakeplugin.Call, method string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method {
			n++
		}
	}
	return n
}
