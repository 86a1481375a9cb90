package manifest

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const webYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
`

var (
	fileOrigin = Origin{Source: SourceFile, Location: "/etc/kubernetes/manifests/web.yaml", NodeName: "Node-1"}
	seen       = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, data, wantErr string
	}{
		{"yaml", webYAML, ""},
		{"json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, ""},
		{"not yaml", "a: [", "not YAML or JSON"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "kind: Required value"},
		{"wrong kind", "apiVersion: v1\nkind: Service\n", `kind is "Service", want "Pod"`},
		{"wrong version", "apiVersion: v2\nkind: Pod\n", `apiVersion is "v2", want "v1"`},
		{"list is not a pod", "apiVersion: v1\nkind: PodList\nitems: []\n", `kind is "PodList"`},
		{"wrong type", strings.Replace(webYAML, "containerPort: 80", "containerPort: eighty", 1), "decode Pod"},
		{"bad quantity", strings.Replace(webYAML, "    ports:", "    resources: {limits: {cpu: lots}}\n    ports:", 1), "quantities must match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := Decode([]byte(tc.data), "/m/web.yaml")
			if tc.wantErr == "" {
				if err != nil || pod == nil {
					t.Fatalf("Decode: %v", err)
				}
				if pod.Kind != "" || pod.APIVersion != "" {
					t.Errorf("type meta kept: %+v", pod.TypeMeta)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "static pod manifest /m/web.yaml: ") {
				t.Fatalf("Decode error = %v, want one naming the manifest and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDecodeList(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"PodList","items":[
	  {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
	  {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`
	for _, tc := range []struct {
		name, data string
		want       int
	}{{"pod", webYAML, 1}, {"list", list, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := DecodeList([]byte(tc.data), "http://127.0.0.1/pods")
			if err != nil || len(pods) != tc.want {
				t.Fatalf("DecodeList = %d pods, %v; want %d", len(pods), err, tc.want)
			}
			if pods[0].Spec.RestartPolicy != v1.RestartPolicyAlways {
				t.Errorf("list items not defaulted: %+v", pods[0].Spec)
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	pod, err := Decode([]byte(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: -5
  volumes:
  - {name: scratch}
  - {name: data, image: {reference: registry:5000/data}}
  - {name: pinned-data, image: {reference: "data:v1"}}
  initContainers: [{name: init, image: "busybox@sha256:abc"}]
  containers:
  - name: app
    image: registry:5000/app
    ports: [{containerPort: 8080}]
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
    resources: {limits: {cpu: "1", memory: 1Gi}, requests: {cpu: 100m}}
    livenessProbe: {httpGet: {port: 8080}}
  - name: pinned
    image: app:v2
`), "m")
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	app, init, pinned := s.Containers[0], s.InitContainers[0], s.Containers[1]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"restartPolicy", s.RestartPolicy, v1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, v1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"negative grace period", *s.TerminationGracePeriodSeconds, int64(1)},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"securityContext", s.SecurityContext != nil, true},
		{"volume defaults to emptyDir", s.Volumes[0].EmptyDir != nil, true},
		{"untagged image volume pull policy", s.Volumes[1].Image.PullPolicy, v1.PullAlways},
		{"tagged image volume pull policy", s.Volumes[2].Image.PullPolicy, v1.PullIfNotPresent},
		{"untagged image pull policy", app.ImagePullPolicy, v1.PullAlways},
		{"digest image pull policy", init.ImagePullPolicy, v1.PullIfNotPresent},
		{"tagged image pull policy", pinned.ImagePullPolicy, v1.PullIfNotPresent},
		{"terminationMessagePath", app.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", app.TerminationMessagePolicy, v1.TerminationMessageReadFile},
		{"port protocol", app.Ports[0].Protocol, v1.ProtocolTCP},
		{"host port on host network", app.Ports[0].HostPort, int32(8080)},
		{"fieldRef apiVersion", app.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"request kept", app.Resources.Requests.Cpu().String(), "100m"},
		{"request from limit", app.Resources.Requests.Memory().String(), "1Gi"},
		{"probe timeout", app.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", app.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success", app.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure", app.LivenessProbe.FailureThreshold, int32(3)},
		{"probe path", app.LivenessProbe.HTTPGet.Path, "/"},
		{"probe scheme", app.LivenessProbe.HTTPGet.Scheme, v1.URISchemeHTTP},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                       "latest",
		"nginx:latest":                "latest",
		"nginx:1.27":                  "1.27",
		"registry:5000/nginx":         "latest",
		"registry:5000/nginx:1":       "1",
		"nginx@sha256:abc":            "",
		"nginx:1@sha256:abc":          "1",
		"registry:5000/a/b@sha256:ab": "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestFromFileIdentity(t *testing.T) {
	pod, err := FromFile([]byte(webYAML), fileOrigin, seen)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, got, want string }{
		{"name", pod.Name, "web-node-1"},
		{"namespace", pod.Namespace, "default"},
		{"nodeName", pod.Spec.NodeName, "Node-1"},
		{"hash annotation", pod.Annotations[ConfigHashAnnotation], string(pod.UID)},
		{"source annotation", pod.Annotations[ConfigSourceAnnotation], "file"},
		{"seen annotation", pod.Annotations[ConfigSeenAnnotation], "2026-01-02T03:04:05.000000006Z"},
		{"phase", string(pod.Status.Phase), "Pending"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if len(pod.UID) != 32 {
		t.Errorf("UID %q: want 32 hex digits", pod.UID)
	}
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != want {
		t.Errorf("tolerations = %+v, want only %+v", pod.Spec.Tolerations, want)
	}

	url, err := FromURL([]byte(webYAML), Origin{Source: SourceHTTP, Location: "http://127.0.0.1/p", NodeName: "node-1"}, seen)
	if err != nil {
		t.Fatal(err)
	}
	if len(url[0].Spec.Tolerations) != 0 || url[0].Annotations[ConfigSourceAnnotation] != "http" {
		t.Errorf("URL pod: tolerations %+v, source %q: want none and http", url[0].Spec.Tolerations, url[0].Annotations[ConfigSourceAnnotation])
	}
}

func TestUID(t *testing.T) {
	uid := func(t *testing.T, data string, o Origin, at time.Time) string {
		t.Helper()
		pod, err := FromFile([]byte(data), o, at)
		if err != nil {
			t.Fatal(err)
		}
		return string(pod.UID)
	}
	base := uid(t, webYAML, fileOrigin, seen)
	otherPath, otherNode := fileOrigin, fileOrigin
	otherPath.Location = "/etc/kubernetes/manifests/web2.yaml"
	otherNode.NodeName = "node-2"
	for _, tc := range []struct {
		name     string
		data     string
		o        Origin
		at       time.Time
		wantSame bool
	}{
		{"same manifest later", webYAML, fileOrigin, seen.Add(time.Hour), true},
		{"same manifest as JSON", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}`, fileOrigin, seen, true},
		{"explicit defaults", strings.Replace(webYAML, "spec:\n", "spec:\n  restartPolicy: Always\n", 1), fileOrigin, seen, true},
		{"image changed", strings.Replace(webYAML, "1.27", "1.28", 1), fileOrigin, seen, false},
		{"other path", webYAML, otherPath, seen, false},
		{"other node", webYAML, otherNode, seen, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uid(t, tc.data, tc.o, tc.at); (got == base) != tc.wantSame {
				t.Errorf("UID %s vs %s: want same=%v", got, base, tc.wantSame)
			}
		})
	}
	t.Run("explicit UID kept", func(t *testing.T) {
		if got := uid(t, strings.Replace(webYAML, "name: web\n", "name: web\n  uid: abc\n", 1), fileOrigin, seen); got != "abc" {
			t.Errorf("UID = %q, want abc", got)
		}
	})
}

func TestContentHash(t *testing.T) {
	a, _ := FromFile([]byte(webYAML), fileOrigin, seen)
	b, _ := FromFile([]byte(webYAML), fileOrigin, seen.Add(time.Minute))
	if ContentHash(a) != ContentHash(b) {
		t.Error("content hash depends on the seen time")
	}
	b.Spec.Containers[0].Image = "other"
	if ContentHash(a) == ContentHash(b) {
		t.Error("content hash misses a spec change")
	}
	if a.Annotations[ConfigSeenAnnotation] == "" {
		t.Error("ContentHash removed the seen annotation from the pod itself")
	}
}

func TestFromFileErrors(t *testing.T) {
	edit := func(old, new string) string { return strings.Replace(webYAML, old, new, 1) }
	for _, tc := range []struct{ name, data, want string }{
		{"no name", edit("name: web\n", "generateName: web-\n"), "metadata.name: Required value"},
		{"bad name", edit("name: web\n", "name: Web_1\n"), `metadata.name: Invalid value: "Web_1-node-1"`},
		{"bad namespace", edit("name: web\n", "name: web\n  namespace: Kube.System\n"), `metadata.namespace: Invalid value: "Kube.System"`},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n", "spec.containers: Required value"},
		{"no image", edit("    image: nginx:1.27\n", ""), "spec.containers[0].image: Required value"},
		{"bad container name", edit("- name: nginx", "- name: NGINX"), `spec.containers[0].name: Invalid value: "NGINX"`},
		{"duplicate container", edit("spec:\n", "spec:\n  initContainers: [{name: nginx, image: x}]\n"), `spec.containers[0].name: Duplicate value: "nginx"`},
		{"restart policy", edit("spec:\n", "spec:\n  restartPolicy: Sometimes\n"), `spec.restartPolicy: Unsupported value: "Sometimes"`},
		{"dns policy", edit("spec:\n", "spec:\n  dnsPolicy: Google\n"), `spec.dnsPolicy: Unsupported value: "Google"`},
		{"port range", edit("containerPort: 80", "containerPort: 70000"), "spec.containers[0].ports[0].containerPort: Invalid value: 70000"},
		{"duplicate port name", edit("    - containerPort: 80\n", "    - {containerPort: 80, name: http}\n    - {containerPort: 81, name: http}\n"), `spec.containers[0].ports[1].name: Duplicate value: "http"`},
		{"env name", edit("    ports:", "    env: [{name: \"A=B\"}]\n    ports:"), `spec.containers[0].env[0].name: Invalid value: "A=B"`},
		{"request above limit", edit("    ports:", "    resources: {limits: {cpu: 1}, requests: {cpu: 2}}\n    ports:"), "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\""},
		{"unknown mount", edit("    ports:", "    volumeMounts: [{name: data, mountPath: /d}]\n    ports:"), `spec.containers[0].volumeMounts[0].name: Not found: "data"`},
		{"secret volume", edit("spec:\n", "spec:\n  volumes: [{name: s, secret: {secretName: s}}]\n"), "static pods may not reference secrets (via secret volumes)"},
		{"service account", edit("spec:\n", "spec:\n  serviceAccountName: sa\n"), "static pods may not reference serviceaccounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromFile([]byte(tc.data), fileOrigin, seen)
			prefix := "static pod manifest /etc/kubernetes/manifests/web.yaml: "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant %q...%q", err, prefix, tc.want)
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	pod := &v1.Pod{}
	pod.Name = "web"
	pod.Namespace = "default"
	pod.Spec = v1.PodSpec{
		RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst,
		Containers: []v1.Container{{Name: "a", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile,
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("-1")}}}},
		TerminationGracePeriodSeconds: ptr[int64](-1),
	}
	err := Validate(pod)
	want := "spec.containers[0].image: Required value; spec.containers[0].resources.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0; spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate = %v\nwant %s", err, want)
	}
}

func TestValidateProcMount(t *testing.T) {
	unmasked, dflt, bogus := v1.UnmaskedProcMount, v1.DefaultProcMount, v1.ProcMountType("Bogus")
	tests := []struct {
		name      string
		hostUsers *bool
		procMount *v1.ProcMountType
		want      string
	}{
		{name: "none"},
		{name: "Default in the host's user namespace", procMount: &dflt},
		{name: "Unmasked with hostUsers unset", procMount: &unmasked,
			want: "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"},
		{name: "Unmasked with hostUsers: true", hostUsers: ptr(true), procMount: &unmasked,
			want: "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"},
		{name: "Unmasked with hostUsers: false", hostUsers: ptr(false), procMount: &unmasked},
		{name: "unknown type", procMount: &bogus,
			want: "spec.containers[0].securityContext.procMount: Unsupported value: \"Bogus\": supported values: \"Default\", \"Unmasked\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.Name, pod.Namespace = "web", "default"
			pod.Spec = v1.PodSpec{
				RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst, HostUsers: tc.hostUsers,
				Containers: []v1.Container{{Name: "a", Image: "busybox", ImagePullPolicy: v1.PullAlways,
					TerminationMessagePolicy: v1.TerminationMessageReadFile,
					SecurityContext:          &v1.SecurityContext{ProcMount: tc.procMount}}},
			}
			checkValidate(t, pod, tc.want)
		})
	}
}

// TestValidateSeccompProfile checks that a static pod's Localhost seccomp
// profile is refused as the API server refuses it: an absolute name or
// one with "..", which the kubelet would otherwise join to its seccomp
// root and so reach a file outside it.
func TestValidateSeccompProfile(t *testing.T) {
	localhost := func(name string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}
	}
	const c = "spec.containers[0].securityContext.seccompProfile."
	tests := []struct {
		name           string
		pod, container *v1.SeccompProfile
		want           string
	}{
		{name: "none"},
		{name: "runtime default", pod: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
		{name: "a relative name", container: localhost("profiles/audit.json")},
		{name: "a name with dots", container: localhost("a..b/..c.json")},
		{name: "an absolute name", container: localhost("/etc/profile.json"),
			want: c + `localhostProfile: Invalid value: "/etc/profile.json": must be a relative path`},
		{name: "dot-dot", container: localhost("../../../etc/profile.json"),
			want: c + `localhostProfile: Invalid value: "../../../etc/profile.json": must not contain '..'`},
		{name: "dot-dot inside", pod: localhost("a/../../b.json"),
			want: `spec.securityContext.seccompProfile.localhostProfile: Invalid value: "a/../../b.json": must not contain '..'`},
		{name: "localhost without a name", container: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost},
			want: c + "localhostProfile: Required value: must be set when seccomp type is Localhost"},
		{name: "no type", container: &v1.SeccompProfile{},
			want: c + "type: Required value: type is required when seccompProfile is set"},
		{name: "unknown type", container: &v1.SeccompProfile{Type: "Bogus"},
			want: c + `type: Unsupported value: "Bogus": supported values: "Localhost", "RuntimeDefault", "Unconfined"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.Name, pod.Namespace = "web", "default"
			pod.Spec = v1.PodSpec{
				RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst,
				SecurityContext: &v1.PodSecurityContext{SeccompProfile: tc.pod},
				Containers: []v1.Container{{Name: "a", Image: "busybox", ImagePullPolicy: v1.PullAlways,
					TerminationMessagePolicy: v1.TerminationMessageReadFile,
					SecurityContext:          &v1.SecurityContext{SeccompProfile: tc.container}}},
			}
			checkValidate(t, pod, tc.want)
		})
	}
}

func TestConfigHash(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"the annotation", &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{ConfigHashAnnotation: "h"}}}, "h"},
		{"else the UID", &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}, "u"},
	} {
		if got := ConfigHash(tc.pod); got != tc.want {
			t.Errorf("%s: ConfigHash = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// checkValidate fails t unless Validate refuses pod with exactly want, or
// accepts it when want is "".
func checkValidate(t *testing.T, pod *v1.Pod, want string) {
	t.Helper()
	err := Validate(pod)
	if want == "" {
		if err != nil {
			t.Fatalf("Validate = %v, want nil", err)
		}
		return
	}
	if err == nil || err.Error() != want {
		t.Fatalf("Validate = %v\nwant %s", err, want)
	}
}

func TestHostUsersFalseSharesNoHostNamespace(t *testing.T) {
	edit := func(spec string) string {
		return strings.Replace(webYAML, "spec:\n", "spec:\n  hostUsers: false\n"+spec, 1)
	}
	const prefix = "static pod manifest /etc/kubernetes/manifests/web.yaml: "
	tests := []struct {
		name, data string
		gate       bool
		want       string
	}{
		{name: "a user namespace alone", data: edit("")},
		{name: "hostNetwork", data: edit("  hostNetwork: true\n"), want: "spec.hostNetwork: Forbidden: when `hostUsers` is false"},
		{name: "hostNetwork with UserNamespacesHostNetworkSupport", data: edit("  hostNetwork: true\n"), gate: true},
		{name: "hostPID and hostIPC, even with the gate", data: edit("  hostPID: true\n  hostIPC: true\n"), gate: true,
			want: "spec.HostPID: Forbidden: when `hostUsers` is false; spec.HostIPC: Forbidden: when `hostUsers` is false"},
		{name: "volumeDevices", data: strings.Replace(edit("  volumes: [{name: d, hostPath: {path: /dev/null}}]\n"), "    ports:", "    volumeDevices: [{name: d, devicePath: /dev/x}]\n    ports:", 1),
			want: "spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false"},
		{name: "the host's user namespace may share the others", data: strings.Replace(webYAML, "spec:\n", "spec:\n  hostUsers: true\n  hostNetwork: true\n  hostPID: true\n", 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := fileOrigin
			o.UserNamespacesHostNetwork = tc.gate
			_, err := FromFile([]byte(tc.data), o, seen)
			want := ""
			if tc.want != "" {
				want = prefix + tc.want
			}
			if got := errOf(err); got != want {
				t.Errorf("error %q\nwant %q", got, want)
			}
		})
	}
}

func errOf(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
