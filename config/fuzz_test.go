package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// configSeeds are KubeletConfiguration documents as operators write them,
// and their usual mistakes.
var configSeeds = []string{
	header,
	header + "staticPodPath: manifests\nmaxPods: 30\nreadOnlyPort: 10255\n",
	header + "address: 127.0.0.1\nport: 10250\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nauthorization:\n  mode: Webhook\n",
	header + "evictionHard:\n  memory.available: 100Mi\n  nodefs.available: 10%\nmergeDefaultEvictionSettings: true\n",
	header + "kubeReserved:\n  cpu: 100m\n  memory: 256Mi\nsystemReserved: {cpu: 200m}\nenforceNodeAllocatable: [pods]\n",
	header + "featureGates:\n  PodLogsQuerySplitStreams: true\nregisterWithTaints:\n- key: dedicated\n  value: infra\n  effect: NoSchedule\n",
	header + "syncFrequency: 30s\nfileCheckFrequency: 20s\nimageMinimumGCAge: 2m\nshutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n",
	header + "clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\nresolvConf: /etc/resolv.conf\nstaticPodURLHeader:\n  X-A: [b, c]\n",
	header + "maxPods: 30\nmaxPods: 40\n",
	header + "maxpods: 30\n",
	header + "noSuchField: 1\n",
	header + "maxPods: many\n",
	header + "syncFrequency: 5 minutes\n",
	"apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
	"kind: KubeletConfiguration\n",
	`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":12}`,
	header + "maxPods: 1e3\n",
	header + "maxPods: 99999999999\n",
	header + "podPidsLimit: 1.5\n",
	header + "syncFrequency: 90\n",
	header + "evictionHard: null\nfeatureGates: {NoSuchGate: true}\n",
	header + "base: &b {cpu: 100m}\nkubeReserved: *b\nsystemReserved: *b\n",
	header + "staticPodPath: \"\"\nresolvConf: ../resolv.conf\n",
	header + "authentication: {x509: {clientCAFile: pki/ca.crt}}\ntlsCertFile: pki/kubelet.crt\ntlsPrivateKeyFile: pki/kubelet.key\n",
	"- a\n- b\n",
	"",
	"a: [",
}

// loadFiles writes config (unless nil) as DIR/kubelet.yaml and each drop-in
// as DIR/conf.d/NN-dropin.conf, and loads them as actorlet does. Relative
// paths in config resolve against DIR, so loads to compare share it.
func loadFiles(t *testing.T, dir string, config []byte, dropIns ...[]byte) (cfg *kubeletconfigv1beta1.KubeletConfiguration, paths []string, err error) {
	t.Helper()
	var args []string
	if config != nil {
		path := filepath.Join(dir, "kubelet.yaml")
		if err := os.WriteFile(path, config, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config="+path)
		paths = append(paths, path)
	}
	if dropIns != nil {
		confDir := filepath.Join(dir, "conf.d")
		if err := os.RemoveAll(confDir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(confDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, d := range dropIns {
			path := filepath.Join(confDir, string(rune('1'+i))+"0-dropin.conf")
			if err := os.WriteFile(path, d, 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, path)
		}
		args = append(args, "--config-dir="+confDir)
	}
	c, err := ParseCommandLine(args)
	if err != nil {
		t.Fatalf("ParseCommandLine(%q): %v", args, err)
	}
	cfg, _, err = Load(c)
	return cfg, paths, err
}

// checkLoadError fails unless err names one of the files (or their
// directory) it comes from.
func checkLoadError(t *testing.T, err error, paths []string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(err.Error(), p) || strings.Contains(err.Error(), filepath.Dir(p)) {
			return
		}
	}
	t.Errorf("error %q names none of %q", err, paths)
}

// checkValid validates cfg: no panic, and every problem names its field.
func checkValid(t *testing.T, cfg *kubeletconfigv1beta1.KubeletConfiguration) {
	t.Helper()
	err := Validate(cfg, nil)
	if err == nil {
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Fatalf("Validate: %v is not a *ValidationError with problems", err)
	}
	for _, p := range ve.Problems {
		if p.Field == "" || p.Reason == "" {
			t.Errorf("Validate: problem %+v names no field or no reason", p)
		}
	}
}

// FuzzLoadConfigFile loads a --config file. An error names the file; a
// configuration that loads validates without panicking, and its dump
// (--dump-config) loads back to the same configuration.
func FuzzLoadConfigFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		dir := t.TempDir()
		cfg, paths, err := loadFiles(t, dir, doc)
		if err != nil {
			checkLoadError(t, err, paths)
			return
		}
		checkValid(t, cfg)
		dump, err := Dump(cfg)
		if err != nil {
			t.Fatalf("Dump: %v", err)
		}
		back, _, err := loadFiles(t, dir, dump)
		if err != nil {
			t.Fatalf("loading the dump of %q:\n%s\nfails: %v", doc, dump, err)
		}
		if !reflect.DeepEqual(back, cfg) {
			again, _ := Dump(back)
			t.Errorf("the dump of %q loads back differently:\n%s\nvs\n%s", doc, dump, again)
		}
	})
}

// FuzzLoadDropIns merges a --config-dir drop-in over a --config file. An
// error names a file or the directory. Drop-ins are merge patches, so
// giving the same drop-in twice changes nothing, and neither does a
// drop-in that restates the configuration (its dump).
func FuzzLoadDropIns(f *testing.F) {
	dropIns := []string{
		header + "maxPods: 50\n",
		header + "evictionHard:\n  memory.available: 200Mi\n",
		header + "kubeReserved: {memory: 1Gi}\nfeatureGates: {PodLogsQuerySplitStreams: false}\n",
		header + "clusterDNS: [10.96.0.11, 10.96.0.12]\nstaticPodPath: null\n",
		header + "authentication: {anonymous: {enabled: true}}\n",
		header + "maxPods: 1\nmaxPods: 2\n",
		header + "maxpods: 3\n",
		"kind: KubeletConfiguration\n",
		"",
	}
	for i, s := range configSeeds {
		f.Add([]byte(s), []byte(dropIns[i%len(dropIns)]))
	}
	f.Fuzz(func(t *testing.T, config, dropIn []byte) {
		dir := t.TempDir()
		cfg, paths, err := loadFiles(t, dir, config, dropIn)
		if err != nil {
			checkLoadError(t, err, paths)
			return
		}
		checkValid(t, cfg)
		twice, _, err := loadFiles(t, dir, config, dropIn, dropIn)
		if err != nil {
			t.Fatalf("the drop-in %q loads once but not twice: %v", dropIn, err)
		}
		if !reflect.DeepEqual(twice, cfg) {
			a, _ := Dump(cfg)
			b, _ := Dump(twice)
			t.Errorf("the drop-in %q twice differs from once:\n%s\nvs\n%s", dropIn, b, a)
		}
		dump, err := Dump(cfg)
		if err != nil {
			t.Fatalf("Dump: %v", err)
		}
		restated, _, err := loadFiles(t, dir, config, dropIn, dump)
		if err != nil {
			t.Fatalf("the dump as a further drop-in fails: %v\n%s", err, dump)
		}
		if !reflect.DeepEqual(restated, cfg) {
			b, _ := Dump(restated)
			t.Errorf("the dump as a further drop-in changes the configuration:\n%s\nvs\n%s", b, dump)
		}
	})
}
