package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// load parses args and loads the configuration, failing the test on error.
func load(t *testing.T, args ...string) (*kubeletconfigv1beta1.KubeletConfiguration, []string) {
	t.Helper()
	cfg, warnings, err := tryLoad(args...)
	if err != nil {
		t.Fatalf("Load(%q): %v", args, err)
	}
	return cfg, warnings
}

func tryLoad(args ...string) (*kubeletconfigv1beta1.KubeletConfiguration, []string, error) {
	c, err := ParseCommandLine(args)
	if err != nil {
		return nil, nil, err
	}
	return Load(c)
}

// lookup returns the field at a dotted JSON path as text, "" when absent.
func lookup(t *testing.T, cfg *kubeletconfigv1beta1.KubeletConfiguration, path string) string {
	t.Helper()
	doc, err := toDocument(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var cur any = doc
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		if cur, ok = m[p]; !ok {
			return ""
		}
	}
	return fmt.Sprint(cur)
}

func containsWarning(warnings []string, substr string) bool {
	for _, w := range warnings {
		if strings.Contains(w, substr) {
			return true
		}
	}
	return false
}
