package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxSize is the largest manifest read, file or URL body, as upstream's
// maxConfigLength: a bigger one is an error, not a truncated pod.
const MaxSize = 10 << 20

// Decode parses a manifest that holds one v1 Pod, in YAML or JSON, and
// applies the API server's defaults (SetDefaults) as upstream's decoder does.
// source (a file path or URL) only names the manifest in errors.
func Decode(data []byte, source string) (*v1.Pod, error) {
	js, kind, err := toJSON(data, source)
	if err != nil {
		return nil, err
	}
	if kind != "Pod" {
		return nil, fmt.Errorf("%s: kind is %q, want \"Pod\"", prefix(source), kind)
	}
	return decodePod(js, source)
}

// DecodeList parses a manifest that holds either one v1 Pod or a v1 PodList,
// in YAML or JSON, and defaults every pod, as upstream's URL source accepts.
func DecodeList(data []byte, source string) ([]*v1.Pod, error) {
	js, kind, err := toJSON(data, source)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "Pod":
		pod, err := decodePod(js, source)
		if err != nil {
			return nil, err
		}
		return []*v1.Pod{pod}, nil
	case "PodList":
		var list v1.PodList
		if err := sjson.UnmarshalCaseSensitivePreserveInts(js, &list); err != nil {
			return nil, fmt.Errorf("%s: decode PodList: %w", prefix(source), err)
		}
		pods := make([]*v1.Pod, 0, len(list.Items))
		for i := range list.Items {
			pod := &list.Items[i]
			// Items carry no kind of their own; the list's says what they are.
			pod.TypeMeta = metav1.TypeMeta{}
			SetDefaults(pod)
			pods = append(pods, pod)
		}
		return pods, nil
	}
	return nil, fmt.Errorf("%s: kind is %q, want \"Pod\" or \"PodList\"", prefix(source), kind)
}

// toJSON converts YAML (JSON is YAML) to JSON and checks the apiVersion,
// returning the kind for the caller to choose the type.
func toJSON(data []byte, source string) ([]byte, string, error) {
	if len(data) > MaxSize {
		return nil, "", fmt.Errorf("%s: %d bytes, larger than the %d bytes allowed", prefix(source), len(data), MaxSize)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not YAML or JSON: %w", prefix(source), err)
	}
	var tm metav1.TypeMeta
	if err := sjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, "", fmt.Errorf("%s: not an object with apiVersion and kind: %w", prefix(source), err)
	}
	switch {
	case tm.Kind == "":
		return nil, "", fmt.Errorf("%s: kind: Required value", prefix(source))
	case tm.APIVersion != "v1":
		return nil, "", fmt.Errorf("%s: apiVersion is %q, want \"v1\"", prefix(source), tm.APIVersion)
	}
	return js, tm.Kind, nil
}

// decodePod decodes case-sensitively, as the API server does, so that a
// misspelt field is ignored rather than matched to a look-alike, and a value
// of the wrong type (a string port, a bad quantity) fails.
func decodePod(js []byte, source string) (*v1.Pod, error) {
	pod := &v1.Pod{}
	if err := sjson.UnmarshalCaseSensitivePreserveInts(js, pod); err != nil {
		return nil, fmt.Errorf("%s: decode Pod: %w", prefix(source), err)
	}
	// Upstream decodes into the internal type and converts back: the pod the
	// kubelet runs carries no type metadata, and the UID hash excludes it.
	pod.TypeMeta = metav1.TypeMeta{}
	SetDefaults(pod)
	return pod, nil
}

// prefix names the manifest at the start of every error.
func prefix(source string) string { return "static pod manifest " + source }
