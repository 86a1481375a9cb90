package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/mount-utils"
)

// fakeSources is an in-memory Sources: objects by "namespace/name", and a
// token per audience. Its not-found errors name the resource in the
// singular, as upstream's watch-based managers do (the FailedMount event
// says `configmap "x" not found`).
type fakeSources struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	bundles    map[string][]byte // by name, or by "signer:NAME"
	tokenErr   error
	// tokenCalls records the projections asked for.
	tokenCalls []v1.ServiceAccountTokenProjection
	// podCerts are the issued credentials by "volume/sourceIndex"; a
	// projection not there has none yet.
	podCerts map[string][2][]byte
}

func (f *fakeSources) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmap"), name)
}

func (f *fakeSources) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secret"), name)
}

func (f *fakeSources) ServiceAccountToken(_ context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (authenticationv1.TokenRequestStatus, error) {
	f.tokenCalls = append(f.tokenCalls, *p)
	if f.tokenErr != nil {
		return authenticationv1.TokenRequestStatus{}, f.tokenErr
	}
	return authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-for-%s-%s", pod.Spec.ServiceAccountName, p.Audience),
		ExpirationTimestamp: metav1.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}, nil
}

func (f *fakeSources) ClusterTrustBundles(_ context.Context, p *v1.ClusterTrustBundleProjection) ([]byte, error) {
	key := ""
	if p.Name != nil {
		key = *p.Name
	} else if p.SignerName != nil {
		key = "signer:" + *p.SignerName
	}
	if b, ok := f.bundles[key]; ok {
		return b, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("clustertrustbundles"), key)
}

func (f *fakeSources) PodCertificateCredentials(_ context.Context, _ *v1.Pod, volumeName string, sourceIndex int) ([]byte, []byte, error) {
	if c, ok := f.podCerts[fmt.Sprintf("%s/%d", volumeName, sourceIndex)]; ok {
		return c[0], c[1], nil
	}
	return nil, nil, errors.New("credential bundle is not issued yet")
}

func (f *fakeSources) PersistentVolumeClaim(context.Context, string, string) (*v1.PersistentVolumeClaim, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeSources) PersistentVolume(context.Context, string) (*v1.PersistentVolume, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeSources) PatchPersistentVolumeClaimStatus(context.Context, string, string, []byte) (*v1.PersistentVolumeClaim, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeSources) CSIDriver(context.Context, string) (*storagev1.CSIDriver, error) {
	return nil, errors.New("not in this fake")
}

func (f *fakeSources) VolumeAttachment(context.Context, string) (*storagev1.VolumeAttachment, error) {
	return nil, errors.New("not in this fake")
}

func newFakeSources() *fakeSources {
	return &fakeSources{
		configMaps: map[string]*v1.ConfigMap{
			"ns/cm": {
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
				Data:       map[string]string{"a": "A", "b": "B"},
				BinaryData: map[string][]byte{"bin": {0, 1, 2}},
			},
		},
		secrets: map[string]*v1.Secret{
			"ns/s": {
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
				Data:       map[string][]byte{"user": []byte("admin"), "pass": []byte("hunter2")},
			},
		},
		bundles: map[string][]byte{
			"root":                 []byte("PEM-ROOT"),
			"signer:example.com/x": []byte("PEM-X"),
		},
		podCerts: map[string][2][]byte{"v/1": {[]byte("KEY"), []byte("CHAIN")}},
	}
}

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }
func yes() *bool         { b := true; return &b }
func str(s string) *string {
	return &s
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "web", UID: "uid-1",
			Labels:      map[string]string{"app": "web", "tier": "front end"},
			Annotations: map[string]string{"note": "say \"hi\"\n", "a.b/c": "x"},
		},
		Spec: v1.PodSpec{
			ServiceAccountName: "default",
			Containers: []v1.Container{{
				Name: "c",
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")},
				},
			}},
			InitContainers: []v1.Container{{Name: "init"}},
		},
	}
}

func testHost(t *testing.T, src Sources) (*Host, *mount.FakeMounter) {
	t.Helper()
	fm := mount.NewFakeMounter(nil)
	h := &Host{
		RootDir: t.TempDir(),
		NodeAllocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("2"),
			v1.ResourceMemory:           resource.MustParse("4Gi"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
		},
		Mounter: fm,
	}
	if src != nil {
		h.Sources = src
	}
	return h, fm
}

// files lists what a container sees in dir: "path=content mode", through
// the user-visible names, skipping the writer's own ".." names.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, _ := d.Info()
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel := filepath.Join(e.Name(), strings.TrimPrefix(p, root))
			out = append(out, fmt.Sprintf("%s=%s %o", rel, data, info.Mode().Perm()))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(out)
	return out
}

func TestSetUpContent(t *testing.T) {
	cmVol := func(mut func(*v1.ConfigMapVolumeSource)) v1.VolumeSource {
		s := &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o644)}
		if mut != nil {
			mut(s)
		}
		return v1.VolumeSource{ConfigMap: s}
	}
	secretVol := func(mut func(*v1.SecretVolumeSource)) v1.VolumeSource {
		s := &v1.SecretVolumeSource{SecretName: "s", DefaultMode: i32(0o644)}
		if mut != nil {
			mut(s)
		}
		return v1.VolumeSource{Secret: s}
	}
	dapi := func(items ...v1.DownwardAPIVolumeFile) v1.VolumeSource {
		return v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: items, DefaultMode: i32(0o644)}}
	}
	field := func(path, fieldPath string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: path, FieldRef: &v1.ObjectFieldSelector{FieldPath: fieldPath}}
	}
	res := func(path, container, name, divisor string) v1.DownwardAPIVolumeFile {
		f := v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: container, Resource: name}}
		if divisor != "" {
			f.ResourceFieldRef.Divisor = resource.MustParse(divisor)
		}
		return f
	}
	projected := func(sources ...v1.VolumeProjection) v1.VolumeSource {
		return v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: sources, DefaultMode: i32(0o644)}}
	}
	token := v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "api", ExpirationSeconds: i64(3600)}}

	tests := []struct {
		name   string
		source v1.VolumeSource
		// noSources runs without an API (Host.Sources nil).
		noSources bool
		pod       func(*v1.Pod)
		plugin    string
		tmpfs     bool
		want      []string
		wantErr   string
	}{
		// configMap
		{
			name: "configMap: every key of data and binaryData, defaultMode", source: cmVol(nil),
			plugin: PluginConfigMap, want: []string{"a=A 644", "b=B 644", "bin=\x00\x01\x02 644"},
		},
		{
			name: "configMap: items, paths, per-item mode",
			source: cmVol(func(s *v1.ConfigMapVolumeSource) {
				s.DefaultMode = i32(0o400)
				s.Items = []v1.KeyToPath{{Key: "a", Path: "dir/first"}, {Key: "bin", Path: "raw", Mode: i32(0o600)}}
			}),
			plugin: PluginConfigMap, want: []string{"dir/first=A 400", "raw=\x00\x01\x02 600"},
		},
		{
			name:    "configMap: missing",
			source:  cmVol(func(s *v1.ConfigMapVolumeSource) { s.Name = "nope" }),
			wantErr: `configmap "nope" not found`,
		},
		{
			name:   "configMap: missing optional is an empty volume",
			source: cmVol(func(s *v1.ConfigMapVolumeSource) { s.Name = "nope"; s.Optional = yes() }),
			plugin: PluginConfigMap, want: nil,
		},
		{
			name:    "configMap: missing key",
			source:  cmVol(func(s *v1.ConfigMapVolumeSource) { s.Items = []v1.KeyToPath{{Key: "zz", Path: "z"}} }),
			wantErr: "configmap references non-existent config key: zz",
		},
		{
			name: "configMap: missing key of an optional one is skipped",
			source: cmVol(func(s *v1.ConfigMapVolumeSource) {
				s.Optional = yes()
				s.Items = []v1.KeyToPath{{Key: "zz", Path: "z"}, {Key: "b", Path: "b"}}
			}),
			plugin: PluginConfigMap, want: []string{"b=B 644"},
		},
		{
			name:    "configMap: no defaultMode",
			source:  cmVol(func(s *v1.ConfigMapVolumeSource) { s.DefaultMode = nil }),
			wantErr: "no defaultMode used, not even the default value for it",
		},
		{
			name: "configMap: invalid path", source: cmVol(func(s *v1.ConfigMapVolumeSource) { s.Items = []v1.KeyToPath{{Key: "a", Path: "../x"}} }),
			wantErr: "invalid path: must not contain '..': ../x",
		},
		{
			name: "configMap: no API", source: cmVol(nil), noSources: true,
			wantErr: "cannot setup configMap volume v because kube client is not configured",
		},
		// secret
		{
			name: "secret: every key, on tmpfs", source: secretVol(nil),
			plugin: PluginSecret, tmpfs: true, want: []string{"pass=hunter2 644", "user=admin 644"},
		},
		{
			name: "secret: items and modes",
			source: secretVol(func(s *v1.SecretVolumeSource) {
				s.DefaultMode = i32(0o440)
				s.Items = []v1.KeyToPath{{Key: "user", Path: "u"}, {Key: "pass", Path: "p/w", Mode: i32(0o400)}}
			}),
			plugin: PluginSecret, tmpfs: true, want: []string{"p/w=hunter2 400", "u=admin 440"},
		},
		{
			name: "secret: missing", source: secretVol(func(s *v1.SecretVolumeSource) { s.SecretName = "nope" }),
			wantErr: `secret "nope" not found`,
		},
		{
			name:   "secret: missing optional",
			source: secretVol(func(s *v1.SecretVolumeSource) { s.SecretName = "nope"; s.Optional = yes() }),
			plugin: PluginSecret, tmpfs: true,
		},
		{
			name:    "secret: missing key",
			source:  secretVol(func(s *v1.SecretVolumeSource) { s.Items = []v1.KeyToPath{{Key: "zz", Path: "z"}} }),
			wantErr: "references non-existent secret key: zz",
		},
		{
			name: "secret: missing key of an optional one is skipped",
			source: secretVol(func(s *v1.SecretVolumeSource) {
				s.Optional = yes()
				s.Items = []v1.KeyToPath{{Key: "zz", Path: "z"}}
			}),
			plugin: PluginSecret, tmpfs: true,
		},
		{
			name: "secret: no API", source: secretVol(nil), noSources: true,
			wantErr: "cannot setup secret volume v because kube client is not configured",
		},
		// downwardAPI
		{
			name: "downwardAPI: metadata fields, on tmpfs, without an API",
			source: dapi(
				field("name", "metadata.name"), field("namespace", "metadata.namespace"), field("uid", "metadata.uid"),
				field("labels", "metadata.labels"), field("annotations", "metadata.annotations"),
				field("app", "metadata.labels['app']"), field("note", "metadata.annotations['note']"),
				field("none", "metadata.labels['absent']"),
			),
			noSources: true, plugin: PluginDownwardAPI, tmpfs: true,
			want: []string{
				"annotations=a.b/c=\"x\"\nnote=\"say \\\"hi\\\"\\n\" 644",
				"app=web 644",
				"labels=app=\"web\"\ntier=\"front end\" 644",
				"name=web 644",
				"namespace=ns 644",
				"none= 644",
				"note=say \"hi\"\n 644",
				"uid=uid-1 644",
			},
		},
		{
			name: "downwardAPI: per-item mode and nested path",
			source: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: i32(0o400), Items: []v1.DownwardAPIVolumeFile{
				{Path: "meta/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: i32(0o640)},
				field("ns", "metadata.namespace"),
			}}},
			plugin: PluginDownwardAPI, tmpfs: true, want: []string{"meta/name=web 640", "ns=ns 400"},
		},
		{
			name: "downwardAPI: resources, divisors, node allocatable, rounding up",
			source: dapi(
				res("cpu-request", "c", "requests.cpu", ""),      // 250m -> 1
				res("cpu-request-m", "c", "requests.cpu", "1m"),  // 250
				res("cpu-limit", "c", "limits.cpu", ""),          // allocatable 2
				res("mem-limit-mi", "c", "limits.memory", "1Mi"), // 128
				res("mem-request", "c", "requests.memory", ""),   // 67108864
				res("mem-request-g", "c", "requests.memory", "1G"),
				res("eph-limit-gi", "c", "limits.ephemeral-storage", "1Gi"), // allocatable 10
				res("init-mem-limit", "init", "limits.memory", "1Gi"),       // allocatable 4
				res("init-cpu-request", "init", "requests.cpu", ""),         // 0
				res("huge", "c", "limits.hugepages-2Mi", ""),
			),
			plugin: PluginDownwardAPI, tmpfs: true,
			want: []string{
				"cpu-limit=2 644", "cpu-request-m=250 644", "cpu-request=1 644",
				"eph-limit-gi=10 644", "huge=0 644", "init-cpu-request=0 644", "init-mem-limit=4 644",
				"mem-limit-mi=128 644", "mem-request-g=1 644", "mem-request=67108864 644",
			},
		},
		{
			name:    "downwardAPI: unsupported field",
			source:  dapi(field("x", "spec.nodeName"), field("y", "metadata.name")),
			wantErr: "unsupported fieldPath: spec.nodeName",
		},
		{
			name:    "downwardAPI: subscript of a field without one",
			source:  dapi(field("x", "metadata.name['a']")),
			wantErr: `fieldPath "metadata.name['a']" does not support subscript`,
		},
		{
			name:    "downwardAPI: invalid label key",
			source:  dapi(field("x", "metadata.labels['-bad-']")),
			wantErr: "invalid key subscript in metadata.labels['-bad-']: ",
		},
		{
			name:    "downwardAPI: unknown container",
			source:  dapi(res("x", "ghost", "limits.cpu", "")),
			wantErr: "container ghost not found",
		},
		{
			name:    "downwardAPI: unsupported resource",
			source:  dapi(res("x", "c", "limits.gpu", "")),
			wantErr: "unsupported container resource : limits.gpu",
		},
		{
			name:    "downwardAPI: every error gathered",
			source:  dapi(field("x", "spec.nodeName"), res("y", "ghost", "limits.cpu", "")),
			wantErr: "[unsupported fieldPath: spec.nodeName, container ghost not found]",
		},
		// projected
		{
			name: "projected: configMap, secret, downwardAPI and token, on tmpfs",
			source: projected(
				v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "ca.crt"}}}},
				v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Items: []v1.KeyToPath{{Key: "user", Path: "user", Mode: i32(0o400)}}}},
				v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{field("namespace", "metadata.namespace")}}},
				token,
			),
			plugin: PluginProjected, tmpfs: true,
			want: []string{"ca.crt=A 644", "namespace=ns 644", "token=token-for-default-api 644", "user=admin 400"},
		},
		{
			name:   "projected: token 0600 with fsGroup",
			source: projected(token),
			pod:    func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: i64(2000)} },
			plugin: PluginProjected, tmpfs: true,
			// fsGroup adds the read-only group bits: 0640, as upstream says.
			want: []string{"token=token-for-default-api 640"},
		},
		{
			name:   "projected: token 0600 when every container runs as one user",
			source: projected(token),
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: i64(1000)}
			},
			plugin: PluginProjected, tmpfs: true, want: []string{"token=token-for-default-api 600"},
		},
		{
			name:   "projected: token keeps defaultMode when the containers' users differ",
			source: projected(token),
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: i64(1000)}
				p.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{RunAsUser: i64(0)}
			},
			plugin: PluginProjected, tmpfs: true, want: []string{"token=token-for-default-api 644"},
		},
		{
			name: "projected: later source wins a path",
			source: projected(
				v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Items: []v1.KeyToPath{{Key: "a", Path: "x"}}}},
				v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Items: []v1.KeyToPath{{Key: "user", Path: "x"}}}},
			),
			plugin: PluginProjected, tmpfs: true, want: []string{"x=admin 644"},
		},
		{
			name: "projected: optional missing configMap and secret",
			source: projected(
				v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: yes()}},
				v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: yes()}},
			),
			plugin: PluginProjected, tmpfs: true,
		},
		{
			name: "projected: every source's error gathered",
			source: projected(
				v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
				v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Items: []v1.KeyToPath{{Key: "zz", Path: "z"}}}},
			),
			wantErr: `[configmap "nope" not found, references non-existent secret key: zz]`,
		},
		{
			name: "projected: clusterTrustBundle by name and by signer",
			source: projected(
				v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: str("root"), Path: "root.pem"}},
				v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: str("example.com/x"), LabelSelector: &metav1.LabelSelector{}, Path: "x.pem"}},
			),
			plugin: PluginProjected, tmpfs: true, want: []string{"root.pem=PEM-ROOT 644", "x.pem=PEM-X 644"},
		},
		{
			name: "projected: clusterTrustBundle 0600 with fsGroup",
			source: projected(
				v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: str("root"), Path: "root.pem"}},
			),
			pod:    func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: i64(2000)} },
			plugin: PluginProjected, tmpfs: true, want: []string{"root.pem=PEM-ROOT 640"},
		},
		{
			name: "projected: missing optional clusterTrustBundle is an empty file",
			source: projected(
				v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: str("nope"), Path: "b.pem", Optional: yes()}},
			),
			plugin: PluginProjected, tmpfs: true, want: []string{"b.pem= 644"},
		},
		{
			name: "projected: missing clusterTrustBundle",
			source: projected(
				v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: str("nope"), Path: "b.pem"}},
			),
			wantErr: `clustertrustbundles "nope" not found`,
		},
		{
			name:    "projected: clusterTrustBundle without name or signer",
			source:  projected(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b.pem"}}),
			wantErr: "ClusterTrustBundle projection requires either name or signerName to be set",
		},
		{
			name: "projected: podCertificate bundle, key and chain at the source's index",
			source: projected(token, v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{
				SignerName: "example.com/s", CredentialBundlePath: "creds", KeyPath: "key", CertificateChainPath: "chain"}}),
			plugin: PluginProjected, tmpfs: true,
			want: []string{"chain=CHAIN 644", "creds=KEYCHAIN 644", "key=KEY 644", "token=token-for-default-api 644"},
		},
		{
			name: "projected: podCertificate bundle only, 0600 with a runAsUser",
			source: projected(token, v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{
				SignerName: "example.com/s", CredentialBundlePath: "creds"}}),
			pod:    func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: i64(0)} },
			plugin: PluginProjected, tmpfs: true, want: []string{"creds=KEYCHAIN 600", "token=token-for-default-api 600"},
		},
		{
			name:    "projected: podCertificate not issued yet",
			source:  projected(v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", CredentialBundlePath: "creds"}}),
			wantErr: "credential bundle is not issued yet",
		},
		{
			name:      "projected: podCertificate without an API",
			source:    projected(v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", CredentialBundlePath: "creds"}}),
			noSources: true,
			wantErr:   `cannot setup projected volume v because kube client is not configured`,
		},
		{
			name:      "projected: token without an API",
			source:    projected(token),
			noSources: true,
			wantErr:   "cannot setup projected volume v because kube client is not configured",
		},
		{
			name:      "projected: downwardAPI alone needs no API",
			source:    projected(v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{field("n", "metadata.name")}}}),
			noSources: true,
			plugin:    PluginProjected, tmpfs: true, want: []string{"n=web 644"},
		},
		{
			name:    "projected: no defaultMode",
			source:  v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{token}}},
			wantErr: "no defaultMode used, not even the default value for it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needsRoot := tt.pod != nil && strings.Contains(tt.name, "fsGroup")
			if needsRoot && os.Geteuid() != 0 {
				t.Skip("fsGroup ownership needs root")
			}
			var src Sources
			if !tt.noSources {
				src = newFakeSources()
			}
			h, fm := testHost(t, src)
			pod := testPod()
			if tt.pod != nil {
				tt.pod(pod)
			}
			vol := &v1.Volume{Name: "v", VolumeSource: tt.source}
			m, err := h.SetUp(context.Background(), pod, vol)
			if tt.wantErr != "" {
				want := `MountVolume.SetUp failed for volume "v" : ` + tt.wantErr
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				// The payload is collected first: its errors leave nothing
				// (an invalid path is found by the writer, as upstream).
				_, statErr := os.Stat(PodDir(h.RootDir, pod.UID))
				if !strings.HasPrefix(tt.wantErr, "invalid path") && !errors.Is(statErr, fs.ErrNotExist) {
					t.Errorf("a failed payload left the pod directory: %v", statErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := VolumeDir(h.RootDir, pod.UID, tt.plugin, "v")
			if m != (Mounted{Name: "v", Path: dir, ReadOnly: true, SELinuxRelabel: true}) {
				t.Errorf("Mounted %+v", m)
			}
			if got := files(t, dir); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("files\n got %q\nwant %q", got, tt.want)
			}
			var tmpfs bool
			for _, mp := range fm.MountPoints {
				if mp.Path == dir && mp.Type == "tmpfs" {
					tmpfs = true
				}
			}
			if tmpfs != tt.tmpfs {
				t.Errorf("on tmpfs %v, want %v (mounts %v)", tmpfs, tt.tmpfs, fm.MountPoints)
			}
			if !tt.tmpfs {
				info, err := os.Stat(dir)
				if err != nil || info.Mode().Perm() != 0o777 {
					t.Errorf("directory mode %v (%v), want 0777 as upstream's emptyDir", info.Mode(), err)
				}
			}
		})
	}
}

func TestSetUpContentTokenRequest(t *testing.T) {
	src := newFakeSources()
	h, _ := testHost(t, src)
	proj := v1.ServiceAccountTokenProjection{Path: "t", Audience: "vault", ExpirationSeconds: i64(600)}
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: i32(0o644), Sources: []v1.VolumeProjection{{ServiceAccountToken: &proj}},
	}}}
	if _, err := h.SetUp(context.Background(), testPod(), vol); err != nil {
		t.Fatal(err)
	}
	if len(src.tokenCalls) != 1 || src.tokenCalls[0] != proj {
		t.Errorf("token requests %+v, want one for %+v", src.tokenCalls, proj)
	}

	src.tokenErr = errors.New("forbidden")
	if _, err := h.SetUp(context.Background(), testPod(), vol); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("error %v, want the token error", err)
	}
}

// TestSetUpContentRefresh sets a volume up again after its objects and
// the pod changed: the content follows, keys gone are removed, and an
// unchanged payload is not rewritten.
func TestSetUpContentRefresh(t *testing.T) {
	src := newFakeSources()
	h, fm := testHost(t, src)
	pod := testPod()
	ctx := context.Background()
	vols := []*v1.Volume{
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o644)}}},
		{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: i32(0o644)}}},
		{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: i32(0o644), Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
	}
	dataLink := func(m Mounted) string {
		l, err := os.Readlink(filepath.Join(m.Path, "..data"))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var first []Mounted
	var firstLinks []string
	for _, v := range vols {
		m, err := h.SetUp(ctx, pod, v)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, m)
		firstLinks = append(firstLinks, dataLink(m))
	}

	// Unchanged: same timestamped directory, tmpfs not mounted again.
	mounts := len(fm.MountPoints)
	for i, v := range vols {
		m, err := h.SetUp(ctx, pod, v)
		if err != nil {
			t.Fatal(err)
		}
		if dataLink(m) != firstLinks[i] {
			t.Errorf("%s rewritten though unchanged", v.Name)
		}
	}
	if len(fm.MountPoints) != mounts {
		t.Errorf("tmpfs mounted again: %v", fm.MountPoints)
	}

	// Changed.
	src.configMaps["ns/cm"].Data = map[string]string{"a": "A2"}
	src.configMaps["ns/cm"].BinaryData = nil
	src.secrets["ns/s"].Data = map[string][]byte{"user": []byte("root")}
	pod.Labels["app"] = "web2"
	want := [][]string{{"a=A2 644"}, {"user=root 644"}, {"labels=app=\"web2\"\ntier=\"front end\" 644"}}
	for i, v := range vols {
		m, err := h.SetUp(ctx, pod, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := files(t, m.Path); fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("%s after the update: %q, want %q", v.Name, got, want[i])
		}
		if _, err := os.Lstat(filepath.Join(m.Path, firstLinks[i])); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the old timestamped directory stays", v.Name)
		}
	}

	// The object gone: the error, and the last content stays.
	delete(src.configMaps, "ns/cm")
	if _, err := h.SetUp(ctx, pod, vols[0]); err == nil {
		t.Fatal("no error for the deleted configMap")
	}
	if got := files(t, first[0].Path); fmt.Sprint(got) != "[a=A2 644]" {
		t.Errorf("content after a failed refresh: %q", got)
	}
}

func TestSetUpContentFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fsGroup ownership needs root")
	}
	h, _ := testHost(t, newFakeSources())
	pod := testPod()
	always := v1.FSGroupChangeAlways
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: i64(2345), FSGroupChangePolicy: &always}
	vol := &v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o400),
		Items: []v1.KeyToPath{{Key: "a", Path: "d/a"}},
	}}}
	m, err := h.SetUp(context.Background(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	check := func(p string, wantMode os.FileMode) {
		t.Helper()
		info, err := os.Lstat(filepath.Join(m.Path, p))
		if err != nil {
			t.Fatal(err)
		}
		gid := info.Sys().(*syscall.Stat_t).Gid
		mode := info.Mode() & (os.ModePerm | os.ModeSetgid)
		if gid != 2345 || mode != wantMode {
			t.Errorf("%s: gid %d mode %v, want gid 2345 mode %v", p, gid, mode, wantMode)
		}
	}
	// The volume's root: 0777 of the emptyDir, with the read-write group
	// bits and setgid of the emptyDir's own change.
	check(".", 0o777|os.ModeSetgid)
	check("..data/d", 0o755|os.ModeSetgid)
	// 0400 with the read-only group bits.
	check("..data/d/a", 0o440)
	check("d", os.ModePerm) // a symlink: chowned, never chmod-ed
}

func TestSetUpContentNestedMountpoints(t *testing.T) {
	h, _ := testHost(t, newFakeSources())
	pod := testPod()
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "cm", MountPath: "/etc/app"},
		{Name: "s", MountPath: "/etc/app/secret/"},
		{Name: "d", MountPath: "/etc/app/secret/deeper"},
		{Name: "x", MountPath: "/etc/application"},
	}
	pod.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{{Name: "cm", MountPath: "/cfg"}, {Name: "e", MountPath: "/cfg/e"}}
	vol := &v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o644)}}}
	m, err := h.SetUp(context.Background(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"secret", "e"} {
		if info, err := os.Lstat(filepath.Join(m.Path, d)); err != nil || !info.IsDir() || info.Mode().Perm() != 0o755 {
			t.Errorf("nested mount point %s: %v %v", d, info, err)
		}
	}
	for _, d := range []string{"secret/deeper", "application", "lication"} {
		if _, err := os.Lstat(filepath.Join(m.Path, d)); err == nil {
			t.Errorf("%s made, but it is not nested directly in the volume", d)
		}
	}

	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cm", MountPath: "../up"}}
	if _, err := h.SetUp(context.Background(), pod, vol); err == nil || !strings.Contains(err.Error(), "invalid container mount point ../up") {
		t.Fatalf("error %v, want invalid container mount point", err)
	}
}

// TestSetUpContentTmpfs mounts a real tmpfs for a secret volume: its
// contents are never on disk.
func TestSetUpContentTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	h, _ := testHost(t, newFakeSources())
	h.Mounter = mount.New("")
	pod := testPod()
	vol := &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: i32(0o400)}}}
	m, err := h.SetUp(context.Background(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mount.New("").Unmount(m.Path); err != nil {
			t.Errorf("unmounting: %v", err)
		}
	})
	var st syscall.Statfs_t
	if err := syscall.Statfs(m.Path, &st); err != nil {
		t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if st.Type != tmpfsMagic {
		t.Fatalf("filesystem type %#x, want tmpfs", st.Type)
	}
	if got := files(t, m.Path); fmt.Sprint(got) != "[pass=hunter2 400 user=admin 400]" {
		t.Errorf("files %q", got)
	}
	// Again, as after a restart of actorlet: the tmpfs is reused, not
	// mounted over (its content is still there).
	if _, err := h.SetUp(context.Background(), pod, vol); err != nil {
		t.Fatal(err)
	}
	mps, err := mount.New("").List()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mp := range mps {
		if mp.Path == m.Path {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d mounts at the volume, want 1", n)
	}
}
