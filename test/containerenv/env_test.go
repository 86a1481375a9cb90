package containerenv

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/test/agent"
)

// The values of the test's Secrets: distinctive, so that a search of the
// log and the events for them finds nothing else.
const (
	secretPassword = "pw-7f3a91c2-not-for-logs"
	secretToken    = "tok-5be08d44-not-for-logs"
	secretShared   = "shared-c1d9e6a0-not-for-logs"
)

// TestEnv: what a container's environment holds, as upstream's
// makeEnvironmentVariables builds it, asserted from inside the container:
// env valueFrom ConfigMap and Secret keys (optional or not, an object that
// comes after the pod), envFrom with prefixes and precedence, the
// downward API's fields and resources, $(VAR) expansion, the service
// variables, env files, and no secret value in actorlet's log nor in the
// pods' events. The subtests share one node.
func TestEnv(t *testing.T) {
	n := newEnvNode(t)
	yes, no := true, false

	// The Services of the namespace are made before any pod, so that the
	// node's watch has them when the pods' containers are created (the
	// race upstream documents in makeEnvironmentVariables).
	foo := n.service(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo"}, Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
	db := n.service(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-db"}, Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{
			{Name: "pg", Port: 5432, Protocol: v1.ProtocolTCP},
			{Name: "metrics", Port: 9187, Protocol: v1.ProtocolUDP},
		}}})
	n.service(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "headless"}, Spec: v1.ServiceSpec{
		ClusterIP: v1.ClusterIPNone, Ports: []v1.ServicePort{{Port: 81}}}})
	kube, err := n.Admin.CoreV1().Services(metav1.NamespaceDefault).Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubernetes service: %v", err)
	}

	n.ConfigMap(t, "settings", map[string]string{"color": "blue", "size": "42"})
	n.Secret(t, "creds", map[string]string{"password": secretPassword})

	t.Run("configMapKeyRef and secretKeyRef", func(t *testing.T) {
		// The password also goes into an argument of the command: what
		// actorlet logs of a container must not show it either.
		c := n.Busybox("c", `exec sleep 3600`)
		c.Command = append(c.Command, "argv0", "$(PASSWORD)")
		c.Env = []v1.EnvVar{
			cmKey("COLOR", "settings", "color", nil),
			cmKey("SIZE", "settings", "size", &no),
			secretKey("PASSWORD", "creds", "password", nil),
			cmKey("OPT_KEY", "settings", "nope", &yes),
			cmKey("OPT_CM", "no-such-cm", "color", &yes),
			secretKey("OPT_SKEY", "creds", "nope", &yes),
			secretKey("OPT_SECRET", "no-such-secret", "password", &yes),
		}
		n.Run(t, n.NewPod("keyref", nil, c))
		n.Expect(t, "keyref", "c", `echo "$COLOR $SIZE $PASSWORD"`, "blue 42 "+secretPassword)
		// An optional key or object that is not there leaves the variable
		// out, not empty.
		n.Expect(t, "keyref", "c", `env | grep ^OPT_ | wc -l`, "0")
	})

	t.Run("a missing key or object", func(t *testing.T) {
		// Each container fails on its own: upstream's SyncPod tries every
		// container of the pod.
		cmk, sk, cmo, so := n.Sleeper("cmkey"), n.Sleeper("secretkey"), n.Sleeper("cmfrom"), n.Sleeper("secretfrom")
		cmk.Env = []v1.EnvVar{cmKey("X", "settings", "nope", nil)}
		sk.Env = []v1.EnvVar{secretKey("X", "creds", "nope", &no)}
		cmo.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("absent")}}}
		so.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: ref("absent"), Optional: &no}}}
		n.Create(t, n.NewPod("missing", nil, cmk, sk, cmo, so))
		for _, tc := range []struct{ container, msg string }{
			{"cmkey", fmt.Sprintf("couldn't find key nope in ConfigMap %s/settings", n.NS)},
			{"secretkey", fmt.Sprintf("couldn't find key nope in Secret %s/creds", n.NS)},
			{"cmfrom", `configmap "absent" not found`},
			{"secretfrom", `secret "absent" not found`},
		} {
			n.configError(t, "missing", tc.container, tc.msg)
		}
	})

	t.Run("a ConfigMap created after the pod", func(t *testing.T) {
		c := n.Sleeper("c")
		c.Env = []v1.EnvVar{cmKey("LATE", "late", "k", nil)}
		n.Create(t, n.NewPod("late", nil, c))
		n.configError(t, "late", "c", `configmap "late" not found`)
		n.ConfigMap(t, "late", map[string]string{"k": "finally"})
		// Upstream's pod worker retries a failed sync after its back-off
		// period (10 s, with jitter); the ConfigMap's watch event itself
		// does not resync the pod.
		n.Running(t, "late", 60*time.Second)
		n.Expect(t, "late", "c", `echo "$LATE"`, "finally")
	})

	t.Run("envFrom", func(t *testing.T) {
		n.ConfigMap(t, "from-a", map[string]string{"A": "a1", "SHARED": "from-a", "B": "b-a", "CLEARED": "set",
			"dotted.key": "dv", "dash-key": "dk"})
		n.ConfigMap(t, "from-b", map[string]string{"SHARED": "from-b"})
		n.Secret(t, "from-s", map[string]string{"TOKEN": secretToken, "SHARED": secretShared})
		// No shell as the first process: a shell would not pass on the
		// variables whose names are not shell names.
		c := n.Sleeper("c")
		c.Command = []string{"sleep", "3600"}
		c.EnvFrom = []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("from-a")}},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: ref("from-s")}, Prefix: "S_"},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("from-b")}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("no-such-cm"), Optional: &yes}},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: ref("no-such-secret"), Optional: &yes}, Prefix: "GONE_"},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("from-b")}, Prefix: "P_"},
		}
		// env wins over envFrom, even with an empty value.
		c.Env = []v1.EnvVar{{Name: "B", Value: "from-env"}, {Name: "CLEARED"}}
		n.Run(t, n.NewPod("envfrom", nil, c))
		// Later envFrom entries win: SHARED is from-b's.
		n.Expect(t, "envfrom", "c", `echo "$A|$SHARED|$B|$S_TOKEN|$S_SHARED|$P_SHARED"`,
			"a1|from-b|from-env|"+secretToken+"|"+secretShared+"|from-b")
		// Keys that are not shell names are variables too (upstream's
		// RelaxedEnvironmentVariableValidation); the shell of exec does
		// not pass them on, so they are read from the first process's.
		n.Expect(t, "envfrom", "c", `tr '\0' '\n' </proc/1/environ | grep -E '^(CLEARED|GONE_|dotted|dash)' | sort`,
			"CLEARED=\ndash-key=dk\ndotted.key=dv")
	})

	t.Run("fieldRef and resourceFieldRef", func(t *testing.T) {
		node, err := n.NodeObject()
		if err != nil {
			t.Fatal(err)
		}
		alloc := node.Status.Allocatable
		c, other := n.Sleeper("c"), n.Sleeper("other")
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		c.Env = []v1.EnvVar{
			field("NAME", "metadata.name"),
			field("NS", "metadata.namespace"),
			field("UID", "metadata.uid"),
			field("LABEL", "metadata.labels['k']"),
			field("ANNOTATION", "metadata.annotations['k']"),
			field("NODE", "spec.nodeName"),
			field("SA", "spec.serviceAccountName"),
			field("HOST_IP", "status.hostIP"),
			field("HOST_IPS", "status.hostIPs"),
			field("POD_IP", "status.podIP"),
			field("POD_IPS", "status.podIPs"),
			res("MEM_MI", "", "limits.memory", "1Mi"),
			res("REQ_MEM_MI", "", "requests.memory", "1Mi"),
			res("CPU_MILLI", "", "limits.cpu", "1m"),
			res("CPU", "", "limits.cpu", ""),
			res("OTHER_MEM", "other", "limits.memory", ""),
		}
		p := n.NewPod("downward", nil, c, other)
		p.Labels = map[string]string{"k": "label-value"}
		p.Annotations = map[string]string{"k": "annotation-value"}
		p = n.Run(t, p)
		want := []string{p.Name, p.Namespace, string(p.UID), "label-value", "annotation-value", n.Name,
			p.Spec.ServiceAccountName, p.Status.HostIP, joinIPs(p.Status.HostIPs, func(h v1.HostIP) string { return h.IP }), p.Status.PodIP, joinIPs(p.Status.PodIPs, func(a v1.PodIP) string { return a.IP })}
		n.Expect(t, "downward", "c",
			`echo "$NAME|$NS|$UID|$LABEL|$ANNOTATION|$NODE|$SA|$HOST_IP|$HOST_IPS|$POD_IP|$POD_IPS"`,
			strings.Join(want, "|"))
		if p.Spec.ServiceAccountName == "" || p.Status.PodIP == "" || p.Status.HostIP == "" {
			t.Errorf("the API's pod lacks what the test compares: serviceAccountName %q, podIP %q, hostIP %q",
				p.Spec.ServiceAccountName, p.Status.PodIP, p.Status.HostIP)
		}
		// A limit the container does not set is the node's allocatable;
		// values are rounded up to the divisor.
		cpu := alloc.Cpu().MilliValue()
		n.Expect(t, "downward", "c", `echo "$MEM_MI|$REQ_MEM_MI|$CPU_MILLI|$CPU|$OTHER_MEM"`,
			fmt.Sprintf("64|64|%d|%d|%d", cpu, (cpu+999)/1000, alloc.Memory().Value()))
	})

	t.Run("fieldRef on the host network", func(t *testing.T) {
		// A host-network pod's IPs are the node's InternalIPs, in its
		// status and its downward-API variables (issue #33).
		node, err := n.NodeObject()
		if err != nil {
			t.Fatal(err)
		}
		var nodeIP string
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP && nodeIP == "" {
				nodeIP = a.Address
			}
		}
		if nodeIP == "" {
			t.Fatalf("the node has no InternalIP: %v", node.Status.Addresses)
		}
		c := n.Sleeper("c")
		c.Env = []v1.EnvVar{field("POD_IP", "status.podIP"), field("POD_IPS", "status.podIPs"), field("HOST_IP", "status.hostIP")}
		p := n.NewPod("hostnet-ip", nil, c)
		p.Spec.HostNetwork = true
		p = n.Run(t, p)
		if p.Status.PodIP != nodeIP || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != nodeIP {
			t.Errorf("podIP %q podIPs %v, want the node's InternalIP %s", p.Status.PodIP, p.Status.PodIPs, nodeIP)
		}
		n.Expect(t, "hostnet-ip", "c", `echo "$POD_IP|$POD_IPS|$HOST_IP"`, nodeIP+"|"+nodeIP+"|"+nodeIP)
	})

	t.Run("$(VAR) expansion", func(t *testing.T) {
		n.ConfigMap(t, "exp", map[string]string{"FROMCM": "cmval"})
		c := n.Busybox("c", `echo '$(DERIVED) $$(BASE) $(NOPE)' > /tmp/cmd; printf '%s\n' "$@" > /tmp/args; exec sleep 3600`)
		c.Args = []string{"argv0", "$(BASE)", "$$(BASE)", "$(NOPE)", "$(FOO_SERVICE_PORT)", "$(FROMCM)", "$(AFTER)", "$$$(BASE)", "$(BASE"}
		c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("exp")}}}
		c.Env = []v1.EnvVar{
			{Name: "BASE", Value: "base"},
			{Name: "DERIVED", Value: "$(BASE)-x"},
			{Name: "FROM_CM", Value: "$(FROMCM)"},
			{Name: "SVC", Value: "$(FOO_SERVICE_HOST):$(FOO_SERVICE_PORT)"},
			{Name: "ESCAPED", Value: "$$(BASE)"},
			{Name: "UNDEFINED", Value: "$(NOPE)"},
			// Only the variables defined before are there.
			{Name: "EARLY", Value: "$(AFTER)"},
			{Name: "AFTER", Value: "after"},
			{Name: "KEYREF", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref("settings"), Key: "color"}}},
			{Name: "OF_KEYREF", Value: "$(KEYREF)!"},
		}
		n.Run(t, n.NewPod("expansion", nil, c))
		n.Expect(t, "expansion", "c", `echo "$DERIVED|$FROM_CM|$SVC|$ESCAPED|$UNDEFINED|$EARLY|$OF_KEYREF"`,
			"base-x|cmval|"+foo.Spec.ClusterIP+":80|$(BASE)|$(NOPE)|$(AFTER)|blue!")
		// The command and the arguments see every variable of the
		// container: AFTER too.
		n.Expect(t, "expansion", "c", `cat /tmp/cmd`, "base-x $(BASE) $(NOPE)")
		n.Expect(t, "expansion", "c", `cat /tmp/args`, "base\n$(BASE)\n$(NOPE)\n80\ncmval\nafter\n$base\n$(BASE")
	})

	// kubeVars are the variables of default/kubernetes, which every pod
	// gets.
	kubeVars := serviceVars("KUBERNETES", kube)
	t.Run("service variables", func(t *testing.T) {
		n.Run(t, n.NewPod("links", nil, n.Sleeper("c")))
		want := append(append(append([]string{}, kubeVars...), serviceVars("FOO", foo)...), serviceVars("MY_DB", db)...)
		sort.Strings(want)
		n.Expect(t, "links", "c", `env | grep -E '^(KUBERNETES|FOO|MY_DB|HEADLESS)_' | sort`, strings.Join(want, "\n"))
	})

	t.Run("enableServiceLinks false", func(t *testing.T) {
		c := n.Sleeper("c")
		c.Env = []v1.EnvVar{{Name: "X", Value: "$(FOO_SERVICE_HOST)|$(KUBERNETES_SERVICE_PORT)"}}
		p := n.NewPod("nolinks", nil, c)
		p.Spec.EnableServiceLinks = &no
		n.Run(t, p)
		want := append([]string{}, kubeVars...)
		sort.Strings(want)
		n.Expect(t, "nolinks", "c", `env | grep -E '^(KUBERNETES|FOO|MY_DB|HEADLESS)_' | sort`, strings.Join(want, "\n"))
		n.Expect(t, "nolinks", "c", `echo "$X"`, fmt.Sprintf("$(FOO_SERVICE_HOST)|%d", kube.Spec.Ports[0].Port))
	})

	t.Run("fileKeyRef", func(t *testing.T) {
		// The init container writes the env file (upstream's syntax:
		// KEY='value', a value may span lines) into an emptyDir; the
		// containers that read it need not mount it.
		vols := []v1.Volume{{Name: "envs", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		write := n.Busybox("write",
			`printf '%s\n' "GREETING='hello from file'" '# a comment' "MULTI='line one" "line two'" "  INDENTED='ok' # trailing" > /envs/app.env`,
			v1.VolumeMount{Name: "envs", MountPath: "/envs"})
		app, nokey, nofile := n.Sleeper("app"), n.Sleeper("nokey"), n.Sleeper("nofile")
		app.Env = []v1.EnvVar{
			fileKey("GREETING", "app.env", "GREETING", nil),
			fileKey("MULTI", "app.env", "MULTI", nil),
			fileKey("INDENTED", "app.env", "INDENTED", nil),
			fileKey("OPTIONAL", "app.env", "NOPE", &yes),
		}
		nokey.Env = []v1.EnvVar{fileKey("X", "app.env", "NOPE", &no)}
		nofile.Env = []v1.EnvVar{fileKey("X", "missing.env", "GREETING", &yes)}
		p := n.NewPod("envfile", vols, app, nokey, nofile)
		p.Spec.InitContainers = []v1.Container{write}
		p = n.Create(t, p)
		n.ContainerRunning(t, "envfile", "app")
		n.Expect(t, "envfile", "app", `echo "$GREETING|$MULTI|$INDENTED|${OPTIONAL-unset}"`, "hello from file|line one\nline two|ok|unset")
		// Upstream names the file by its path on the host.
		hostPath := filepath.Join(n.RootDir, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "envs", "app.env")
		n.configError(t, "envfile", "nokey", fmt.Sprintf(`environment variable key "NOPE" not found in file %q`, hostPath))
		// A file that cannot be read is an error even when optional, and
		// upstream says no more than this.
		n.configError(t, "envfile", "nofile", "couldn't parse env file")
	})

	t.Run("no secret value in the log or the events", func(t *testing.T) {
		n.noneTold(t, secretPassword, secretToken, secretShared)
	})
}

// service creates the Service in the namespace as the admin and returns it
// as the API server made it (with its ClusterIP).
func (n *envNode) service(t *testing.T, s *v1.Service) *v1.Service {
	t.Helper()
	s, err := n.Admin.CoreV1().Services(n.NS).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	return s
}

// configError waits for the pod's container to wait with
// CreateContainerConfigError and for upstream's Failed event of the
// container, and checks that they say msg and "Error: msg": a different
// message fails the subtest without waiting for it.
func (n *envNode) configError(t *testing.T, pod, container, msg string) {
	t.Helper()
	if got := n.Waiting(t, pod, container, "CreateContainerConfigError"); got != msg {
		t.Errorf("container %s of %s waits with %q, want %q", container, pod, got, msg)
	}
	fieldPath := "spec.containers{" + container + "}"
	var ev *v1.Event
	agent.Eventually(t, "a Failed event of "+fieldPath+" of "+pod, 60*time.Second, func() error {
		evs, err := n.Events(pod)
		if err != nil {
			return err
		}
		for i := range evs {
			if evs[i].Reason == "Failed" && evs[i].InvolvedObject.FieldPath == fieldPath {
				ev = &evs[i]
				return nil
			}
		}
		return fmt.Errorf("%d events, none Failed of %s", len(evs), fieldPath)
	})
	if want := "Error: " + msg; ev.Message != want || ev.Type != v1.EventTypeWarning {
		t.Errorf("event of %s of %s: %s %q, want Warning %q", container, pod, ev.Type, ev.Message, want)
	}
}

// serviceVars are upstream's variables of a Service for a pod (envvars
// FromServices), as `env` prints them, for a Service whose ports are all
// named.
func serviceVars(prefix string, s *v1.Service) []string {
	ip := s.Spec.ClusterIP
	first := s.Spec.Ports[0]
	vars := []string{
		prefix + "_SERVICE_HOST=" + ip,
		fmt.Sprintf("%s_SERVICE_PORT=%d", prefix, first.Port),
		fmt.Sprintf("%s_PORT=%s://%s:%d", prefix, strings.ToLower(string(first.Protocol)), ip, first.Port),
	}
	for _, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		lower := strings.ToLower(proto)
		pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, proto)
		vars = append(vars,
			fmt.Sprintf("%s_SERVICE_PORT_%s=%d", prefix, strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), p.Port),
			fmt.Sprintf("%s=%s://%s:%d", pp, lower, ip, p.Port),
			pp+"_PROTO="+lower,
			fmt.Sprintf("%s_PORT=%d", pp, p.Port),
			pp+"_ADDR="+ip,
		)
	}
	return vars
}

func ref(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }

func cmKey(name, cm, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: ref(cm), Key: key, Optional: optional}}}
}

func secretKey(name, secret, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: ref(secret), Key: key, Optional: optional}}}
}

func fileKey(name, path, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{
		VolumeName: "envs", Path: path, Key: key, Optional: optional}}}
}

func field(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
}

func res(name, container, what, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{ContainerName: container, Resource: what}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

// joinIPs is a list of addresses as the downward API gives it.
func joinIPs[T any](list []T, ip func(T) string) string {
	s := make([]string, 0, len(list))
	for _, a := range list {
		s = append(s, ip(a))
	}
	return strings.Join(s, ",")
}
