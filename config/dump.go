package config

import (
	"bytes"
	"fmt"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// Dump renders cfg as a KubeletConfiguration YAML document that Load reads back
// unchanged. apiVersion and kind come first so the document is recognisable at
// a glance; the other fields follow in alphabetical order, as upstream prints them.
func Dump(cfg *kubeletconfigv1beta1.KubeletConfiguration) ([]byte, error) {
	doc, err := toDocument(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the configuration: %w", err)
	}
	delete(doc, "apiVersion")
	delete(doc, "kind")
	body, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the configuration as YAML: %w", err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "apiVersion: %s\nkind: %s\n", APIVersion, Kind)
	out.Write(body)
	return out.Bytes(), nil
}
