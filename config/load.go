package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/config/features"
)

const (
	// APIVersion and Kind identify a KubeletConfiguration document.
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"

	dropInExtension = ".conf"
)

// Load builds the effective configuration: defaults (v1beta1 defaults with
// --config, the legacy flag defaults without) < the --config file < the
// --config-dir drop-ins in lexical order < flags given on the command line.
// Warnings are for the operator: duplicate keys, unknown fields, and fields
// actorlet does not implement yet (each kind reported once).
func Load(c *CommandLine) (*kubeletconfigv1beta1.KubeletConfiguration, []string, error) {
	// Defaulting depends on gates, and upstream's process gates at this point
	// are the ones given with --feature-gates.
	gates, _, err := c.FeatureGates()
	if err != nil {
		return nil, nil, err
	}
	l := &loader{gates: gates}
	cfg := c.flagConfig.DeepCopy()
	if c.Options.ConfigFile != "" {
		if cfg, err = l.loadFile(c.Options.ConfigFile); err != nil {
			return nil, nil, err
		}
	}
	if c.Options.ConfigDir != "" {
		if cfg, err = l.mergeDropIns(cfg, c.Options.ConfigDir); err != nil {
			return nil, nil, err
		}
	}
	if c.Options.ConfigFile != "" || c.Options.ConfigDir != "" {
		if err := applyFlagPrecedence(cfg, c.Args); err != nil {
			return nil, nil, fmt.Errorf("failed to apply command-line flags over the configuration files: %w", err)
		}
	}
	// Flags' own warnings (deprecation, not implemented) come first, as
	// upstream prints them while parsing; files' fields follow.
	return cfg, append(c.Warnings(), l.report()...), nil
}

// loader accumulates what the documents it reads contain.
type loader struct {
	gates      *features.Gates
	present    []string
	unknown    []string // "a, b (in FILE)" per file
	duplicates []string
}

func (l *loader) report() []string {
	warnings := l.duplicates
	if len(l.unknown) > 0 {
		warnings = append(warnings, "unknown field: "+strings.Join(l.unknown, "; "))
	}
	if ignored := notImplemented(l.present); len(ignored) > 0 {
		warnings = append(warnings, "ignored (not implemented yet): "+strings.Join(ignored, ", "))
	}
	return warnings
}

// loadFile is upstream's loadConfigFile: decode, resolve relative paths against
// the file's directory, default, and fill in the OS eviction thresholds.
func (l *loader) loadFile(name string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	path, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("failed to load kubelet config file %s: %w", name, err)
	}
	doc, err := l.readDocument(path)
	if err != nil {
		return nil, err
	}
	cfg := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := decodeInto(doc, cfg); err != nil {
		return nil, fmt.Errorf("failed to decode kubelet config file %s: %w", path, err)
	}
	resolveRelativePaths(cfg, filepath.Dir(path))
	if err := setDefaults(cfg, l.gates); err != nil {
		return nil, fmt.Errorf("kubelet config file %s: %w", path, err)
	}
	applyEvictionHardDefault(cfg)
	return cfg, nil
}

// mergeDropIns is upstream's mergeKubeletConfigurations: each *.conf file under
// dir (recursively, in lexical order) is a JSON merge patch over the
// configuration so far, so maps merge key by key and lists are replaced.
func (l *loader) mergeDropIns(base *kubeletconfigv1beta1.KubeletConfiguration, dir string) (*kubeletconfigv1beta1.KubeletConfiguration, error) {
	baseDoc, err := toDocument(base)
	if err != nil {
		return nil, fmt.Errorf("failed to prepare the configuration for drop-ins: %w", err)
	}
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(baseDoc, ""), nil); err != nil {
		return nil, fmt.Errorf("failed to prepare the configuration for drop-ins: %w", err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(d.Name()) != dropInExtension {
			return nil
		}
		doc, err := l.readDocument(path)
		if err != nil {
			return err
		}
		return k.Load(confmap.Provider(doc, ""), nil)
	})
	if err != nil {
		return nil, fmt.Errorf("failed to load drop-in directory %s: %w", dir, err)
	}
	merged := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := decodeInto(k.Raw(), merged); err != nil {
		return nil, fmt.Errorf("failed to decode the configuration merged from drop-in directory %s: %w", dir, err)
	}
	if err := setDefaults(merged, l.gates); err != nil {
		return nil, fmt.Errorf("drop-in directory %s: %w", dir, err)
	}
	return merged, nil
}

// readDocument reads one KubeletConfiguration document and checks it: YAML
// syntax, misspelt fields, apiVersion/kind, and field types.
func (l *loader) readDocument(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read kubelet config file: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("kubelet config file %s was empty", path)
	}
	parser := &yamlParser{}
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider(data), parser); err != nil {
		return nil, fmt.Errorf("failed to parse kubelet config file %s: %w", path, err)
	}
	if parser.strictErr != nil {
		l.duplicates = append(l.duplicates, fmt.Sprintf("kubelet config file %s loaded leniently, the last of duplicate keys wins: %s",
			path, strings.Join(strings.Fields(parser.strictErr.Error()), " ")))
	}
	doc := k.Raw()
	scan := scanFields(doc, path)
	if len(scan.typos) > 0 {
		return nil, errors.New(strings.Join(scan.typos, "; "))
	}
	if err := checkKind(doc, path); err != nil {
		return nil, err
	}
	var probe kubeletconfigv1beta1.KubeletConfiguration
	if err := decodeInto(doc, &probe); err != nil {
		return nil, fmt.Errorf("failed to decode kubelet config file %s: %w", path, err)
	}
	if len(scan.unknown) > 0 {
		l.unknown = append(l.unknown, fmt.Sprintf("%s (in %s)", strings.Join(scan.unknown, ", "), path))
	}
	l.present = append(l.present, scan.present...)
	return doc, nil
}

func checkKind(doc map[string]any, path string) error {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if apiVersion == APIVersion && kind == Kind {
		return nil
	}
	if apiVersion == "" || kind == "" {
		return fmt.Errorf("kubelet config file %s: apiVersion and kind must be set to %q and %q", path, APIVersion, Kind)
	}
	return fmt.Errorf("kubelet config file %s: unsupported apiVersion %q, kind %q; want apiVersion %q, kind %q", path, apiVersion, kind, APIVersion, Kind)
}

// yamlParser is a koanf parser with upstream's two passes: strict YAML first
// (duplicate keys fail), then the lenient reading where the last duplicate wins.
type yamlParser struct {
	strictErr error
}

func (p *yamlParser) Unmarshal(b []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		var lenientErr error
		if j, lenientErr = yaml.YAMLToJSON(b); lenientErr != nil {
			return nil, lenientErr
		}
		p.strictErr = err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a YAML or JSON object: %w", err)
	}
	if doc == nil {
		return nil, errors.New("not a YAML or JSON object")
	}
	return doc, nil
}

func (p *yamlParser) Marshal(m map[string]any) ([]byte, error) { return yaml.Marshal(m) }

// decodeInto decodes doc like upstream's serializer: field names are matched
// case-sensitively and unknown fields are dropped.
func decodeInto(doc map[string]any, out *kubeletconfigv1beta1.KubeletConfiguration) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(b, out)
}

func toDocument(cfg *kubeletconfigv1beta1.KubeletConfiguration) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	return doc, dec.Decode(&doc)
}

// resolveRelativePaths makes the path fields of a --config file relative to the
// file's directory, as upstream's file loader does.
func resolveRelativePaths(c *kubeletconfigv1beta1.KubeletConfiguration, root string) {
	paths := []*string{&c.StaticPodPath, &c.Authentication.X509.ClientCAFile, &c.TLSCertFile, &c.TLSPrivateKeyFile, &c.VolumePluginDir, &c.PodLogsDir}
	if c.ResolverConfig != nil {
		paths = append(paths, c.ResolverConfig)
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(root, *p)
		}
	}
}
