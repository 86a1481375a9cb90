package manifest

import (
	"encoding/json"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// manifestSeeds are static pod manifests as people write them, and their
// usual mistakes.
var manifestSeeds = []string{
	webYAML,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
	`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  labels: {component: etcd, tier: control-plane}
  annotations: {kubeadm.kubernetes.io/etcd.advertise-client-urls: "https://10.0.0.1:2379"}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: etcd
    image: registry.k8s.io/etcd:3.5.15-0
    command: [etcd, --data-dir=/var/lib/etcd]
    resources: {requests: {cpu: 100m, memory: 100Mi}}
    livenessProbe:
      httpGet: {host: 127.0.0.1, path: /livez, port: 2381, scheme: HTTP}
      initialDelaySeconds: 10
      failureThreshold: 8
    volumeMounts:
    - {name: etcd-data, mountPath: /var/lib/etcd}
  volumes:
  - name: etcd-data
    hostPath: {path: /var/lib/etcd, type: DirectoryOrCreate}
`,
	`apiVersion: v1
kind: Pod
metadata: {name: tools, uid: 1234}
spec:
  restartPolicy: OnFailure
  initContainers:
  - {name: init, image: busybox:1.36, command: [sh, -c, "echo hi"], restartPolicy: Always}
  containers:
  - name: main
    image: busybox
    env:
    - {name: A, value: "1"}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    ports: [{containerPort: 8080, hostPort: 8080, protocol: TCP, name: http}]
    resources: {limits: {cpu: "1", memory: 1Gi}}
    readinessProbe: {exec: {command: [cat, /tmp/ready]}}
  volumes:
  - {name: scratch, emptyDir: {sizeLimit: 1Gi}}
  - {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
`,
	`apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers:
  - name: c
    image: registry.local:5000/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    resources: {limits: {cpu: 1000m, memory: 1.5Gi, ephemeral-storage: 1e9}, requests: {cpu: "0.5"}}
    env: [{name: LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}]
    ports: [{containerPort: 53, protocol: UDP}, {containerPort: 53}]
    startupProbe: {tcpSocket: {port: dns}, periodSeconds: 1}
  volumes: [{name: h, hostPath: {path: /tmp}}, {name: cm, configMap: {name: x}}]
`,
	"apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: i}]}\n",
	"a: [",
	"apiVersion: v1\nmetadata: {name: x}\n",
	"apiVersion: v2\nkind: Pod\n",
	strings.Replace(webYAML, "containerPort: 80", "containerPort: eighty", 1),
	strings.Replace(webYAML, "    ports:", "    resources: {limits: {cpu: lots}}\n    ports:", 1),
	strings.Replace(webYAML, "spec:\n", "spec:\n  volumes: [{name: s, secret: {secretName: s}}]\n", 1),
	strings.Replace(webYAML, "name: web\n", "name: Web_1\n", 1),
	"",
	"null",
}

// FuzzManifest decodes, defaults and validates a static pod manifest, as
// the file source does (FromFile), and as the URL source does (FromURL).
// Every error starts by naming the manifest. A manifest that decodes is a
// fixed point: the decoded pod written back as JSON decodes to the same pod,
// and, when it is a valid static pod, to the same UID.
func FuzzManifest(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s))
	}
	const location = "/etc/kubernetes/manifests/fuzz.yaml"
	origin := Origin{Source: SourceFile, Location: location, NodeName: "node-1"}
	f.Fuzz(func(t *testing.T, data []byte) {
		named := func(what string, err error) {
			t.Helper()
			if !strings.HasPrefix(err.Error(), prefix(location)+": ") {
				t.Errorf("%s(%q) error %q does not start by naming the manifest", what, data, err)
			}
		}
		if _, err := FromURL(data, Origin{Source: SourceHTTP, Location: location}, seen); err != nil {
			named("FromURL", err)
		}

		decoded, err := Decode(data, location)
		if err != nil {
			named("Decode", err)
			if _, err := FromFile(data, origin, seen); err == nil {
				t.Fatalf("Decode(%q) fails but FromFile succeeds", data)
			}
			return
		}
		again := decoded.DeepCopy()
		SetDefaults(again)
		if !apiequality.Semantic.DeepEqual(again, decoded) {
			t.Errorf("Decode(%q): defaulting the decoded pod again changes it", data)
		}
		js, err := json.Marshal(decoded)
		if err != nil {
			t.Fatalf("Decode(%q) = a pod that does not marshal: %v", data, err)
		}
		js = []byte(`{"apiVersion":"v1","kind":"Pod",` + string(js[1:]))
		back, err := Decode(js, location)
		if err != nil {
			t.Fatalf("Decode(%q) = a pod whose JSON %s does not decode: %v", data, js, err)
		}
		if !apiequality.Semantic.DeepEqual(back, decoded) {
			t.Errorf("Decode(%q) = a pod whose JSON %s decodes differently", data, js)
		}

		pod, err := FromFile(data, origin, seen)
		if err != nil {
			named("FromFile", err)
			return
		}
		if err := Validate(pod); err != nil {
			t.Errorf("FromFile(%q) = a pod that does not validate: %v", data, err)
		}
		if pod.UID == "" || pod.Spec.NodeName != "node-1" || pod.Annotations[ConfigSourceAnnotation] != SourceFile {
			t.Errorf("FromFile(%q) = a pod without its static identity: uid %q, node %q, annotations %v", data, pod.UID, pod.Spec.NodeName, pod.Annotations)
		}
		fromJSON, err := FromFile(js, origin, seen)
		if err != nil {
			t.Fatalf("FromFile(%q) succeeds, but not on its decoded JSON %s: %v", data, js, err)
		}
		if fromJSON.UID != pod.UID {
			t.Errorf("FromFile(%q): UID %s, but %s from its decoded JSON %s", data, pod.UID, fromJSON.UID, js)
		}
	})
}
