package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// nodeLabelsUsage is --node-labels' help, upstream's: it names the
// kubernetes.io labels a node may set on itself.
var nodeLabelsUsage = fmt.Sprintf("Labels to add when registering the node in the cluster.  Labels must be key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
	strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))

// ValidateNodeLabels is the --node-labels part of upstream's
// ValidateKubeletFlags: a label in the kubernetes.io or k8s.io namespaces
// (or a subdomain of either) must be one a kubelet may set on its own Node
// (kubeletapis.IsKubeletLabel: the NodeRestriction admission plugin would
// refuse the Node with any other), and every key and value must be a valid
// label key and value. The errors are upstream's, naming the labels.
func ValidateNodeLabels(labels map[string]string) error {
	var unknown []string
	invalid := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown = append(unknown, k)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			invalid[k] = append(invalid[k], errs...)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			invalid[v] = append(invalid[v], errs...)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
			unknown, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	if len(invalid) > 0 {
		// Upstream ranges over a map; sorted here, so that the message is
		// the same at every start.
		var errs []string
		for _, k := range slices.Sorted(maps.Keys(invalid)) {
			errs = append(errs, fmt.Sprintf("'%s' - %s", k, strings.Join(invalid[k], ", ")))
		}
		return fmt.Errorf("invalid node labels: %s", strings.Join(errs, "; "))
	}
	return nil
}

// isKubernetesLabel is upstream's: the key's namespace is kubernetes.io or
// k8s.io, or a subdomain of either.
func isKubernetesLabel(key string) bool {
	namespace, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, ns := range []string{"kubernetes.io", "k8s.io"} {
		if namespace == ns || strings.HasSuffix(namespace, "."+ns) {
			return true
		}
	}
	return false
}
