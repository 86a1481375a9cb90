package volume

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/actorlet/actorlet/internal/volume/atomicwriter"
)

// The payloads of configMap and secret volumes and projections, as
// upstream's MakePayload (pkg/volume/configmap, pkg/volume/secret) and the
// projected plugin's collectData. The AtomicWriteVolumeUserFields gate
// (defaultUser, per-item user) is alpha and off in v1.37.2, so a file's
// owner is set only where upstream sets it without the gate: the
// serviceAccountToken, clusterTrustBundle and podCertificate projections.

var errNoDefaultMode = fmt.Errorf("no defaultMode used, not even the default value for it")

// configMap reads a configMap; a missing optional one reads as empty.
func (h *Host) configMap(ctx context.Context, pod *v1.Pod, name string, optional bool) (*v1.ConfigMap, error) {
	cm, err := h.Sources.ConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		if !(apierrors.IsNotFound(err) && optional) {
			return nil, err
		}
		cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name}}
	}
	return cm, nil
}

// secret reads a secret; a missing optional one reads as empty.
func (h *Host) secret(ctx context.Context, pod *v1.Pod, name string, optional bool) (*v1.Secret, error) {
	s, err := h.Sources.Secret(ctx, pod.Namespace, name)
	if err != nil {
		if !(apierrors.IsNotFound(err) && optional) {
			return nil, err
		}
		s = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name}}
	}
	return s, nil
}

func (h *Host) configMapVolumePayload(ctx context.Context, pod *v1.Pod, volName string, src *v1.ConfigMapVolumeSource) (map[string]atomicwriter.FileProjection, error) {
	if h.Sources == nil {
		return nil, errNoClient("configMap", volName)
	}
	optional := src.Optional != nil && *src.Optional
	cm, err := h.configMap(ctx, pod, src.Name, optional)
	if err != nil {
		return nil, err
	}
	return configMapPayload(src.Items, cm, src.DefaultMode, optional)
}

func (h *Host) secretVolumePayload(ctx context.Context, pod *v1.Pod, volName string, src *v1.SecretVolumeSource) (map[string]atomicwriter.FileProjection, error) {
	if h.Sources == nil {
		return nil, errNoClient("secret", volName)
	}
	optional := src.Optional != nil && *src.Optional
	s, err := h.secret(ctx, pod, src.SecretName, optional)
	if err != nil {
		return nil, err
	}
	return secretPayload(src.Items, s, src.DefaultMode, optional)
}

// configMapPayload is upstream's configmap.MakePayload: every key of data
// and binaryData without items, else each item's key at its path; an
// item's mode, else defaultMode. A key missing from a non-optional
// configMap is an error; from an optional one, skipped.
func configMapPayload(items []v1.KeyToPath, cm *v1.ConfigMap, defaultMode *int32, optional bool) (map[string]atomicwriter.FileProjection, error) {
	if defaultMode == nil {
		return nil, errNoDefaultMode
	}
	payload := make(map[string]atomicwriter.FileProjection, len(cm.Data)+len(cm.BinaryData))
	if len(items) == 0 {
		for name, data := range cm.Data {
			payload[name] = atomicwriter.FileProjection{Data: []byte(data), Mode: *defaultMode}
		}
		for name, data := range cm.BinaryData {
			payload[name] = atomicwriter.FileProjection{Data: data, Mode: *defaultMode}
		}
		return payload, nil
	}
	for _, ktp := range items {
		var data []byte
		if s, ok := cm.Data[ktp.Key]; ok {
			data = []byte(s)
		} else if b, ok := cm.BinaryData[ktp.Key]; ok {
			data = b
		} else {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", ktp.Key)
		}
		payload[ktp.Path] = atomicwriter.FileProjection{Data: data, Mode: itemMode(ktp.Mode, defaultMode)}
	}
	return payload, nil
}

// secretPayload is upstream's secret.MakePayload, as configMapPayload
// without binaryData.
func secretPayload(items []v1.KeyToPath, s *v1.Secret, defaultMode *int32, optional bool) (map[string]atomicwriter.FileProjection, error) {
	if defaultMode == nil {
		return nil, errNoDefaultMode
	}
	payload := make(map[string]atomicwriter.FileProjection, len(s.Data))
	if len(items) == 0 {
		for name, data := range s.Data {
			payload[name] = atomicwriter.FileProjection{Data: data, Mode: *defaultMode}
		}
		return payload, nil
	}
	for _, ktp := range items {
		data, ok := s.Data[ktp.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s", ktp.Key)
		}
		payload[ktp.Path] = atomicwriter.FileProjection{Data: data, Mode: itemMode(ktp.Mode, defaultMode)}
	}
	return payload, nil
}

func itemMode(mode, defaultMode *int32) int32 {
	if mode != nil {
		return *mode
	}
	return *defaultMode
}

// projectedPayload is upstream's projected collectData: each source's
// files in the order of the sources (a later one's path wins), every
// source's error gathered into one.
func (h *Host) projectedPayload(ctx context.Context, pod *v1.Pod, volName string, src *v1.ProjectedVolumeSource) (map[string]atomicwriter.FileProjection, error) {
	if src.DefaultMode == nil {
		return nil, errNoDefaultMode
	}
	fsUser := fsUserOf(pod)
	fsGroup := contentFSGroup(pod)
	// upstream: "When FsGroup is set, we depend on SetVolumeOwnership to
	// change from 0600 to 0640."
	credentialMode := *src.DefaultMode
	if fsUser != nil || fsGroup != nil {
		credentialMode = 0o600
	}
	var errs []error
	payload := map[string]atomicwriter.FileProjection{}
	for i, source := range src.Sources {
		part, err := h.projection(ctx, pod, volName, i, &source, src.DefaultMode, credentialMode, fsUser)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps.Copy(payload, part)
	}
	return payload, utilerrors.NewAggregate(errs)
}

// projection collects the files of one source, the index-th, of a
// projected volume. credentialMode and fsUser are those of the token, the
// trust bundle and the pod certificate.
func (h *Host) projection(ctx context.Context, pod *v1.Pod, volName string, index int, source *v1.VolumeProjection, defaultMode *int32, credentialMode int32, fsUser *int64) (map[string]atomicwriter.FileProjection, error) {
	needsAPI := source.Secret != nil || source.ConfigMap != nil || source.ServiceAccountToken != nil ||
		source.ClusterTrustBundle != nil || source.PodCertificate != nil
	if needsAPI && h.Sources == nil {
		return nil, errNoClient("projected", volName)
	}
	switch {
	case source.Secret != nil:
		optional := source.Secret.Optional != nil && *source.Secret.Optional
		s, err := h.secret(ctx, pod, source.Secret.Name, optional)
		if err != nil {
			return nil, err
		}
		return secretPayload(source.Secret.Items, s, defaultMode, optional)
	case source.ConfigMap != nil:
		optional := source.ConfigMap.Optional != nil && *source.ConfigMap.Optional
		cm, err := h.configMap(ctx, pod, source.ConfigMap.Name, optional)
		if err != nil {
			return nil, err
		}
		return configMapPayload(source.ConfigMap.Items, cm, defaultMode, optional)
	case source.DownwardAPI != nil:
		return downwardAPIPayload(source.DownwardAPI.Items, pod, h.NodeAllocatable, defaultMode)
	case source.ServiceAccountToken != nil:
		tp := source.ServiceAccountToken
		token, err := h.Sources.ServiceAccountToken(ctx, pod, tp)
		if err != nil {
			return nil, err
		}
		return map[string]atomicwriter.FileProjection{
			tp.Path: {Data: []byte(token.Token), Mode: credentialMode, FsUser: fsUser},
		}, nil
	case source.ClusterTrustBundle != nil:
		ctb := source.ClusterTrustBundle
		if ctb.Name == nil && ctb.SignerName == nil {
			return nil, fmt.Errorf("ClusterTrustBundle projection requires either name or signerName to be set")
		}
		pem, err := h.Sources.ClusterTrustBundles(ctx, ctb)
		if err != nil {
			// Upstream's allowMissing: a missing bundle, or none matching
			// the signer and selector, is an empty file when optional.
			if !(apierrors.IsNotFound(err) && ctb.Optional != nil && *ctb.Optional) {
				return nil, err
			}
			pem = []byte{}
		}
		return map[string]atomicwriter.FileProjection{
			ctb.Path: {Data: pem, Mode: credentialMode, FsUser: fsUser},
		}, nil
	case source.PodCertificate != nil:
		return h.podCertificatePayload(ctx, pod, volName, index, source.PodCertificate, credentialMode, fsUser)
	}
	return nil, nil
}

// podCertificatePayload is upstream's: the credential bundle (the key,
// then the chain), the key and the chain, each at its path when it has one.
func (h *Host) podCertificatePayload(ctx context.Context, pod *v1.Pod, volName string, index int, pc *v1.PodCertificateProjection, mode int32, fsUser *int64) (map[string]atomicwriter.FileProjection, error) {
	key, chain, err := h.Sources.PodCertificateCredentials(ctx, pod, volName, index)
	if err != nil {
		return nil, err
	}
	payload := map[string]atomicwriter.FileProjection{}
	file := func(path string, data []byte) {
		if path != "" {
			payload[path] = atomicwriter.FileProjection{Data: data, Mode: mode, FsUser: fsUser}
		}
	}
	file(pc.CredentialBundlePath, slices.Concat(key, chain))
	file(pc.KeyPath, key)
	file(pc.CertificateChainPath, chain)
	return payload, nil
}

// fsUserOf is upstream's FsUserFrom: the one runAsUser every container of
// the pod runs as (its own, else the pod's), nil when one has none or two
// differ.
func fsUserOf(pod *v1.Pod) *int64 {
	var fsUser *int64
	var podUser *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		podUser = sc.RunAsUser
	}
	ok := true
	visit := func(sc *v1.SecurityContext) {
		if !ok {
			return
		}
		user := podUser
		if sc != nil && sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if user == nil || (fsUser != nil && *fsUser != *user) {
			ok, fsUser = false, nil
			return
		}
		if fsUser == nil {
			u := *user
			fsUser = &u
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		visit(pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].SecurityContext)
	}
	return fsUser
}
