package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// apiReference names the first kind of API object the pod refers to, as
// upstream's HasAPIObjectReference does: a static pod runs without the API
// server, so it may not use service accounts, secrets, config maps, claims or
// volumes backed by API objects. "" means none.
func apiReference(spec *v1.PodSpec) (string, error) {
	if spec.ServiceAccountName != "" {
		return "serviceaccounts", nil
	}
	if len(spec.ImagePullSecrets) > 0 {
		return "secrets", nil
	}
	containers := make([]*v1.Container, 0, len(spec.InitContainers)+len(spec.Containers)+len(spec.EphemeralContainers))
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		containers = append(containers, (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if r := containerReference(containers); r != "" {
		return r, nil
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims", nil
	}
	for _, v := range spec.Volumes {
		if r, err := volumeReference(&v); r != "" || err != nil {
			return r, err
		}
	}
	return "", nil
}

// containerReference looks at env and envFrom; secrets come first, as
// upstream visits them first.
func containerReference(containers []*v1.Container) string {
	for _, kind := range []string{"secrets", "configmaps"} {
		for _, c := range containers {
			for _, e := range c.EnvFrom {
				if (kind == "secrets" && e.SecretRef != nil) || (kind == "configmaps" && e.ConfigMapRef != nil) {
					return kind
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if (kind == "secrets" && e.ValueFrom.SecretKeyRef != nil) || (kind == "configmaps" && e.ValueFrom.ConfigMapKeyRef != nil) {
					return kind
				}
			}
		}
	}
	return ""
}

func volumeReference(v *v1.Volume) (string, error) {
	switch {
	case v.ConfigMap != nil:
		return "configmaps (via configmap volumes)", nil
	case v.Secret != nil:
		return "secrets (via secret volumes)", nil
	case v.CSI != nil:
		return "csidrivers (via CSI volumes)", nil
	case v.Glusterfs != nil:
		return "endpoints (via glusterFS volumes)", nil
	case v.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims", nil
	case v.Ephemeral != nil:
		return "persistentvolumeclaims (via ephemeral volumes)", nil
	case v.AzureFile != nil:
		return "secrets (via azureFile volumes)", nil
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				return "configmaps (via projected volumes)", nil
			case s.Secret != nil:
				return "secrets (via projected volumes)", nil
			case s.ServiceAccountToken != nil:
				return "serviceaccounts (via projected volumes)", nil
			case s.ClusterTrustBundle != nil:
				return "clustertrustbundles", nil
			case s.PodCertificate != nil:
				return "podcertificates", nil
			case s.DownwardAPI == nil:
				return "", fmt.Errorf("unknown source for projected volume %q", v.Name)
			}
		}
	}
	return "", nil
}
