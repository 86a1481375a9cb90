package apisource

import v1 "k8s.io/api/core/v1"

// Kinds of the objects watched per reference, as OnChange names them.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	// KindPod names a pod whose own credentials changed: a pod
	// certificate was issued, refreshed, denied or failed.
	KindPod = "Pod"
)

// objectKey names one watched object.
type objectKey struct {
	kind, namespace, name string
}

// references returns every ConfigMap and Secret the pod names, as
// upstream's podutil.VisitPodSecretNames and VisitPodConfigmapNames visit
// them: image pull secrets, the env and envFrom of every container (init,
// regular, ephemeral), and volumes (configMap, secret, projected sources,
// and the secret references of the volume types that have one).
func references(pod *v1.Pod) map[objectKey]struct{} {
	refs := map[objectKey]struct{}{}
	add := func(kind, name string) {
		if name != "" {
			refs[objectKey{kind, pod.Namespace, name}] = struct{}{}
		}
	}
	spec := &pod.Spec
	for _, s := range spec.ImagePullSecrets {
		add(KindSecret, s.Name)
	}
	visit := func(c *v1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(KindSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(KindConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(KindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(KindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		visit((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range spec.Volumes {
		src := &spec.Volumes[i].VolumeSource
		switch {
		case src.ConfigMap != nil:
			add(KindConfigMap, src.ConfigMap.Name)
		case src.Secret != nil:
			add(KindSecret, src.Secret.SecretName)
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if p.ConfigMap != nil {
					add(KindConfigMap, p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add(KindSecret, p.Secret.Name)
				}
			}
		case src.AzureFile != nil:
			add(KindSecret, src.AzureFile.SecretName)
		case src.CephFS != nil && src.CephFS.SecretRef != nil:
			add(KindSecret, src.CephFS.SecretRef.Name)
		case src.Cinder != nil && src.Cinder.SecretRef != nil:
			add(KindSecret, src.Cinder.SecretRef.Name)
		case src.FlexVolume != nil && src.FlexVolume.SecretRef != nil:
			add(KindSecret, src.FlexVolume.SecretRef.Name)
		case src.RBD != nil && src.RBD.SecretRef != nil:
			add(KindSecret, src.RBD.SecretRef.Name)
		case src.ScaleIO != nil && src.ScaleIO.SecretRef != nil:
			add(KindSecret, src.ScaleIO.SecretRef.Name)
		case src.ISCSI != nil && src.ISCSI.SecretRef != nil:
			add(KindSecret, src.ISCSI.SecretRef.Name)
		case src.StorageOS != nil && src.StorageOS.SecretRef != nil:
			add(KindSecret, src.StorageOS.SecretRef.Name)
		case src.CSI != nil && src.CSI.NodePublishSecretRef != nil:
			add(KindSecret, src.CSI.NodePublishSecretRef.Name)
		}
	}
	return refs
}
