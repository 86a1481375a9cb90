package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/downwardapi"
	"github.com/actorlet/actorlet/internal/expansion"
	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/volume"
)

// errServicesNotSynced is upstream's refusal to build the env of a pod
// from the API server before the Services were listed: its
// KUBERNETES_SERVICE_HOST would be missing, and the in-cluster clients
// of the container would fail for good.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

// containerEnv is upstream's makeEnvironmentVariables: envFrom first, in
// order, then env, which may refer to any variable defined before it and
// to the service variables, then the service variables no other source
// defined. Values are read when the container is created: a ConfigMap or
// Secret that changes later does not change a running container's env.
// The variables come in the order they were first defined (upstream's
// order is a map's, that is none).
func containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, vols map[string]volume.Mounted, opts Options) ([]*runtimeapi.KeyValue, error) {
	// The API server and the manifest reader default enableServiceLinks;
	// a pod without it (a test's) takes the default, where upstream
	// refuses it.
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var serviceEnv map[string]string
	if opts.Services != nil {
		if !isStatic(pod) && !servicesSynced(ctx, opts.Services) {
			return nil, errServicesNotSynced
		}
		serviceEnv = serviceEnvFor(opts.Services.List(), pod.Namespace, links)
	}
	e := &envBuilder{ctx: ctx, pod: pod, objects: opts.Objects, values: map[string]string{},
		configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	for _, from := range c.EnvFrom {
		if err := e.addFrom(from); err != nil {
			return nil, err
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := e.values[name]; ok {
			return v, true
		}
		v, ok := serviceEnv[name]
		return v, ok
	}
	for _, ev := range c.Env {
		value := ev.Value
		switch {
		case value != "":
			value = expansion.Expand(value, lookup)
		case ev.ValueFrom != nil:
			v, ok, err := e.valueFrom(c, ev.ValueFrom, podIPs, vols, opts)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // an optional source that is not there
			}
			value = v
		}
		e.set(ev.Name, value)
	}
	out := make([]*runtimeapi.KeyValue, 0, len(e.order)+len(serviceEnv))
	for _, k := range e.order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(e.values[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(serviceEnv)) {
		if _, defined := e.values[k]; !defined {
			out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(serviceEnv[k])})
		}
	}
	return out, nil
}

// servicesSyncWait bounds how long a container's creation waits for the
// first list of the Services: at start-up the node's first pods come as
// the Services are listed, and a refusal would cost each of them the
// worker's retry period.
const servicesSyncWait = 5 * time.Second

// servicesSynced waits, within servicesSyncWait and ctx, for the first
// list of the Services.
func servicesSynced(ctx context.Context, s Services) bool {
	if s.HasSynced() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, servicesSyncWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.HasSynced()
		case <-tick.C:
			if s.HasSynced() {
				return true
			}
		}
	}
}

// isStatic tells a pod of a file or HTTP source, which runs without the
// API server (upstream's IsStaticPod).
func isStatic(pod *v1.Pod) bool {
	switch pod.Annotations[manifest.ConfigSourceAnnotation] {
	case manifest.SourceFile, manifest.SourceHTTP:
		return true
	}
	return false
}

// envBuilder holds one container's variables while they are defined, and
// the objects read for them: each ConfigMap and Secret is read once per
// container, as upstream.
type envBuilder struct {
	ctx        context.Context
	pod        *v1.Pod
	objects    Objects
	values     map[string]string
	order      []string
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

func (e *envBuilder) set(name, value string) {
	if _, seen := e.values[name]; !seen {
		e.order = append(e.order, name)
	}
	e.values[name] = value
}

// addFrom adds every key of an envFrom source, prefixed; the keys of one
// object come in their sorted order. Later sources, and env, win.
func (e *envBuilder) addFrom(from v1.EnvFromSource) error {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := e.configMap(from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				return nil
			}
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			e.set(from.Prefix+k, cm.Data[k])
		}
	case from.SecretRef != nil:
		s, err := e.secret(from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				return nil
			}
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(s.Data)) {
			e.set(from.Prefix+k, string(s.Data[k]))
		}
	}
	return nil
}

// valueFrom resolves one variable's source; ok is false for an optional
// ConfigMap or Secret key (or object) that does not exist, which leaves
// the variable out, as upstream.
func (e *envBuilder) valueFrom(c *v1.Container, from *v1.EnvVarSource, podIPs []string, vols map[string]volume.Mounted, opts Options) (string, bool, error) {
	pod := e.pod
	switch {
	case from.FieldRef != nil:
		v, err := fieldRefValue(pod, from.FieldRef.FieldPath, podIPs, opts)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := resourceFieldRefValue(pod, c, from.ResourceFieldRef, opts)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := e.configMap(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return v, true, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := e.secret(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return string(v), true, nil
	case from.FileKeyRef != nil:
		return fileKeyRefValue(from.FileKeyRef, vols)
	}
	// A source this version of the API does not know: nothing to set, as
	// upstream, which only reads the sources it knows.
	return "", true, nil
}

func (e *envBuilder) configMap(name string) (*v1.ConfigMap, error) {
	if cm, ok := e.configMaps[name]; ok {
		return cm, nil
	}
	if e.objects == nil {
		return nil, fmt.Errorf("couldn't get configMap %v/%v, no kubeClient defined", e.pod.Namespace, name)
	}
	cm, err := e.objects.ConfigMap(e.ctx, e.pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	e.configMaps[name] = cm
	return cm, nil
}

func (e *envBuilder) secret(name string) (*v1.Secret, error) {
	if s, ok := e.secrets[name]; ok {
		return s, nil
	}
	if e.objects == nil {
		return nil, fmt.Errorf("couldn't get secret %v/%v, no kubeClient defined", e.pod.Namespace, name)
	}
	s, err := e.objects.Secret(e.ctx, e.pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	e.secrets[name] = s
	return s, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// fieldRefValue is upstream's podFieldSelectorRuntimeValue: the node's and
// the pod's addresses here, the metadata through the downward API.
func fieldRefValue(pod *v1.Pod, path string, podIPs []string, opts Options) (string, error) {
	switch path {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return opts.NodeIP, nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return downwardapi.FieldValue(pod, path)
}

// resourceFieldRefValue is upstream's containerResourceRuntimeValue on the
// pod as defaultPodLimitsForDownwardAPI leaves it: a limit the container
// does not set is the pod's limit when the pod sets one, else the node's
// allocatable.
func resourceFieldRefValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, opts Options) (string, error) {
	allocatable := opts.NodeAllocatable
	if l := pod.Spec.Resources; l != nil && len(l.Limits) > 0 {
		allocatable = allocatable.DeepCopy()
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := l.Limits[name]; ok && !q.IsZero() {
				if _, ok := allocatable[name]; ok {
					allocatable[name] = q.DeepCopy()
				}
			}
		}
	}
	if ref.ContainerName == "" {
		return downwardapi.ContainerResourceValue(ref, c, allocatable)
	}
	return downwardapi.ResourceValue(ref, pod, allocatable)
}
