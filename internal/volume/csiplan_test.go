package volume

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
)

func ptr[T any](v T) *T { return &v }

// TestCSINames checks the names upstream computes, against values
// sha256sum gives for the same input.
func TestCSINames(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"attachment", csiAttachmentName("vol-1", "fake.csi.actorlet.example.com", "node-a"),
			"csi-b03a6a7b9c55c3b7f0f700a3e64ee47d18505d42ed463e6b88caecae6e825fe4"},
		{"global dir", csiGlobalDir("/r", "d", "vol-1"),
			"/r/plugins/kubernetes.io/csi/d/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49"},
		{"ephemeral handle", ephemeralVolumeHandle("uid-1", "inline"),
			"csi-fa93c84a653239e9b4b90d6a3a772a15ad4f6edddc842c6de9db5478e79bbd5b"},
		{"pod dir", csiPodDir("/r", "uid-1", "pv/1"), "/r/pods/uid-1/volumes/kubernetes.io~csi/pv~1"},
		{"unique name", CSIUniqueVolumeName("d", "vol-1"), "kubernetes.io/csi/d^vol-1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestDriverPolicy(t *testing.T) {
	file := storagev1.FileFSGroupPolicy
	for _, tc := range []struct {
		name    string
		d       *storagev1.CSIDriver
		want    csiDriverPolicy
		wantErr string
	}{
		{"no object: attach, RWO with fsType", nil,
			csiDriverPolicy{attachRequired: true, fsGroupPolicy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}, ""},
		{"every field", &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{
			AttachRequired: ptr(false), PodInfoOnMount: ptr(true), RequiresRepublish: ptr(true), FSGroupPolicy: &file,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
			TokenRequests:        []storagev1.TokenRequest{{Audience: "a"}}, ServiceAccountTokenInSecrets: ptr(true)}},
			csiDriverPolicy{podInfoOnMount: true, requiresRepublish: true, fsGroupPolicy: file, found: true,
				modes:         []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
				tokenRequests: []storagev1.TokenRequest{{Audience: "a"}}, tokensInSecrets: true}, ""},
		{"attachRequired unset is true", &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{FSGroupPolicy: &file}},
			csiDriverPolicy{attachRequired: true, fsGroupPolicy: file, found: true}, ""},
		{"no fsGroupPolicy", &storagev1.CSIDriver{}, csiDriverPolicy{}, "expected valid fsGroupPolicy, received nil value or empty string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := driverPolicy(tc.d)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("policy %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSupportsMode(t *testing.T) {
	eph, per := storagev1.VolumeLifecycleEphemeral, storagev1.VolumeLifecyclePersistent
	for _, tc := range []struct {
		name    string
		p       csiDriverPolicy
		mode    storagev1.VolumeLifecycleMode
		wantErr string
	}{
		{"no object, persistent", csiDriverPolicy{}, per, ""},
		{"no object, ephemeral", csiDriverPolicy{}, eph, `volume mode "Ephemeral" not supported by driver d (no CSIDriver object)`},
		{"listed", csiDriverPolicy{found: true, modes: []storagev1.VolumeLifecycleMode{per, eph}}, eph, ""},
		{"not listed", csiDriverPolicy{found: true, modes: []storagev1.VolumeLifecycleMode{per}}, eph,
			`volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])`},
	} {
		err := tc.p.supportsMode("d", tc.mode)
		if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestPlanFSGroup(t *testing.T) {
	g := ptr(int64(2000))
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	rwx := []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	per, eph := storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral
	pol := func(p storagev1.FSGroupPolicy) csiDriverPolicy { return csiDriverPolicy{fsGroupPolicy: p} }
	for _, tc := range []struct {
		name string
		v    csiVolume
		p    csiDriverPolicy
		caps csi.NodeCapabilities
		fsg  *int64
		want fsGroupPlan
	}{
		{"no fsGroup", csiVolume{mode: per}, pol(storagev1.FileFSGroupPolicy), csi.NodeCapabilities{}, nil, fsGroupPlan{}},
		{"the driver applies it", csiVolume{mode: per}, pol(storagev1.NoneFSGroupPolicy), csi.NodeCapabilities{VolumeMountGroup: true}, g, fsGroupPlan{mountGroup: g}},
		{"File: the kubelet walks", csiVolume{mode: per}, pol(storagev1.FileFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{walk: true}},
		{"File, read-only: nobody", csiVolume{mode: per, readOnly: true}, pol(storagev1.FileFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{}},
		{"None: nobody", csiVolume{mode: per}, pol(storagev1.NoneFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{}},
		{"RWOWithFSType, no fsType", csiVolume{mode: per, accessModes: rwo}, pol(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{}},
		{"RWOWithFSType, RWO", csiVolume{mode: per, fsType: "ext4", accessModes: rwo}, pol(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{walk: true}},
		{"RWOWithFSType, RWX", csiVolume{mode: per, fsType: "ext4", accessModes: rwx}, pol(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{}},
		{"RWOWithFSType, inline", csiVolume{mode: eph, fsType: "ext4"}, pol(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), csi.NodeCapabilities{}, g, fsGroupPlan{walk: true}},
	} {
		if got := tc.v.planFSGroup(tc.p, tc.caps, tc.fsg); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestAccessMode(t *testing.T) {
	multi := csi.NodeCapabilities{SingleNodeMultiWriter: true}
	for _, tc := range []struct {
		modes []v1.PersistentVolumeAccessMode
		caps  csi.NodeCapabilities
		want  csipb.VolumeCapability_AccessMode_Mode
	}{
		{nil, csi.NodeCapabilities{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, multi, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadOnlyMany, v1.ReadWriteOnce}, csi.NodeCapabilities{}, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, csi.NodeCapabilities{}, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, csi.NodeCapabilities{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, multi, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	} {
		if got := (csiVolume{accessModes: tc.modes}).accessMode(tc.caps); got != tc.want {
			t.Errorf("%v with %+v: %v, want %v", tc.modes, tc.caps, got, tc.want)
		}
	}
}

// TestPublishRequest: the volume's attributes, with the pod's keys only
// when the driver asks, and the tokens in the volume context or, when the
// driver says so, in the secrets; the PV's fsType and mount options;
// readOnly.
func TestPublishRequest(t *testing.T) {
	tokens := map[string]string{"csi.storage.k8s.io/serviceAccount.tokens": `{"a":{"token":"t"}}`}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u")}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: v1.PersistentVolumeSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, MountOptions: []string{"noatime"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: "d", VolumeHandle: "h", FSType: "ext4", VolumeAttributes: map[string]string{"k": "v"}}}}}
	v := csiFromPV(pv, true)
	secrets := map[string]string{"s": "x"}
	for _, tc := range []struct {
		name    string
		p       csiDriverPolicy
		tokens  map[string]string
		attrs   map[string]string
		secrets map[string]string
	}{
		{"no pod info", csiDriverPolicy{}, nil, map[string]string{"k": "v"}, secrets},
		{"pod info", csiDriverPolicy{podInfoOnMount: true}, nil, map[string]string{"k": "v",
			"csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/pod.namespace": "ns", "csi.storage.k8s.io/pod.uid": "u",
			"csi.storage.k8s.io/serviceAccount.name": "sa", "csi.storage.k8s.io/ephemeral": "false"}, secrets},
		{"tokens in the volume context", csiDriverPolicy{}, tokens,
			map[string]string{"k": "v", "csi.storage.k8s.io/serviceAccount.tokens": `{"a":{"token":"t"}}`}, secrets},
		{"tokens in the secrets", csiDriverPolicy{tokensInSecrets: true}, tokens, map[string]string{"k": "v"},
			map[string]string{"s": "x", "csi.storage.k8s.io/serviceAccount.tokens": `{"a":{"token":"t"}}`}},
	} {
		req := v.publishRequest(tc.p, csi.NodeCapabilities{}, pod, "/stage", "/target", map[string]string{"pc": "1"}, secrets, tc.tokens, ptr(int64(7)))
		want := &csipb.NodePublishVolumeRequest{VolumeId: "h", PublishContext: map[string]string{"pc": "1"}, StagingTargetPath: "/stage",
			TargetPath: "/target", Readonly: true, Secrets: tc.secrets, VolumeContext: tc.attrs,
			VolumeCapability: &csipb.VolumeCapability{
				AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
				AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{"noatime"}, VolumeMountGroup: "7"}}}}
		if req.String() != want.String() {
			t.Errorf("%s:\n%v\nwant\n%v", tc.name, req, want)
		}
	}
	if len(v.attributes) != 1 || len(secrets) != 1 {
		t.Errorf("the PV's attributes (%v) or the secrets (%v) were changed", v.attributes, secrets)
	}
}

// TestTokenAttrs: upstream's JSON of the tokens by audience, each with
// its expiry.
func TestTokenAttrs(t *testing.T) {
	exp := metav1.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		tokens map[string]authenticationv1.TokenRequestStatus
		want   string
	}{
		{"one audience", map[string]authenticationv1.TokenRequestStatus{"vault": {Token: "t1", ExpirationTimestamp: exp}},
			`{"vault":{"token":"t1","expirationTimestamp":"2030-01-02T03:04:05Z"}}`},
		{"the API server's audience and another", map[string]authenticationv1.TokenRequestStatus{
			"": {Token: "t0", ExpirationTimestamp: exp}, "b": {Token: "t2", ExpirationTimestamp: exp}},
			`{"":{"token":"t0","expirationTimestamp":"2030-01-02T03:04:05Z"},"b":{"token":"t2","expirationTimestamp":"2030-01-02T03:04:05Z"}}`},
	} {
		got, err := tokenAttrs(tc.tokens)
		if err != nil || len(got) != 1 || got["csi.storage.k8s.io/serviceAccount.tokens"] != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

// TestRedactTokens: a driver's error that repeats a token loses it, and
// still unwraps to the driver's error; any other is left as it is.
func TestRedactTokens(t *testing.T) {
	tokens := map[string]authenticationv1.TokenRequestStatus{"a": {Token: "eyJhbGc.secret.sig"}, "b": {Token: "other.tok.en"}}
	driverErr := errors.New(`bad volume context map[csi.storage.k8s.io/serviceAccount.tokens:{"a":{"token":"eyJhbGc.secret.sig"}}]`)
	plain := errors.New("no such volume")
	for _, tc := range []struct {
		name   string
		err    error
		tokens map[string]authenticationv1.TokenRequestStatus
		want   string
	}{
		{"no error", nil, tokens, ""},
		{"a token repeated", driverErr, tokens, `bad volume context map[csi.storage.k8s.io/serviceAccount.tokens:{"a":{"token":"[redacted]"}}]`},
		{"no token in it", plain, tokens, "no such volume"},
		{"no tokens asked", driverErr, nil, driverErr.Error()},
	} {
		got := redactTokens(tc.err, tc.tokens)
		if tc.err == nil {
			if got != nil {
				t.Errorf("%s: %v", tc.name, got)
			}
			continue
		}
		if got.Error() != tc.want || !errors.Is(got, tc.err) {
			t.Errorf("%s: %q (is the driver's: %v), want %q", tc.name, got, errors.Is(got, tc.err), tc.want)
		}
	}
}

func TestAttachment(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		va       storagev1.VolumeAttachment
		attached bool
		pc       map[string]string
		err      error
	}{
		{"not yet", storagev1.VolumeAttachment{}, false, nil, nil},
		{"attached", storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"dev": "/x"}}},
			true, map[string]string{"dev": "/x"}, nil},
		{"failed", storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"}, Status: storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Message: "no disk"}}},
			false, nil, errors.New("volume attachment va failed: no disk")},
		{"being deleted", storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va", DeletionTimestamp: &now}, Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			false, nil, errors.New("volume attachment va is being deleted")},
	} {
		pc, attached, err := attachment(&tc.va)
		if attached != tc.attached || !reflect.DeepEqual(pc, tc.pc) || (err == nil) != (tc.err == nil) || err != nil && err.Error() != tc.err.Error() {
			t.Errorf("%s: %v %v %v", tc.name, pc, attached, err)
		}
	}
}

func TestLastUser(t *testing.T) {
	d := func(driver, handle string) map[string]string {
		return map[string]string{volDataDriverName: driver, volDataVolHandle: handle}
	}
	for _, tc := range []struct {
		name   string
		others map[types.UID][]map[string]string
		want   bool
	}{
		{"no pod", nil, true},
		{"only itself", map[types.UID][]map[string]string{"a": {d("x", "h")}}, true},
		{"another pod", map[types.UID][]map[string]string{"a": {d("x", "h")}, "b": {d("x", "h")}}, false},
		{"another handle", map[types.UID][]map[string]string{"b": {d("x", "h2")}}, true},
		{"another driver", map[types.UID][]map[string]string{"b": {d("y", "h")}}, true},
	} {
		if got := lastUser("a", "x", "h", tc.others); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
