// Package credprovider runs upstream's image credential provider plugins
// (pkg/credentialprovider/plugin): executables named by a
// CredentialProviderConfig that, given an image on stdin, answer with
// the credentials to pull it. It reads and validates the configuration,
// execs a plugin for an image its matchImages cover, and caches the
// answer by the key type and for the duration the plugin says. What the
// plugins give is tried after the pod's pull secrets, as upstream.
package credprovider

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	kubeletconfigv1alpha1 "k8s.io/kubelet/config/v1alpha1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	credentialproviderv1alpha1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1alpha1"
	credentialproviderv1beta1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1beta1"
	"sigs.k8s.io/yaml"
)

// Config is a CredentialProviderConfig, whichever of its versions a file
// holds, in its newest (v1) form.
type Config = kubeletconfigv1.CredentialProviderConfig

// Provider is one plugin of a Config.
type Provider = kubeletconfigv1.CredentialProvider

const configKind = "CredentialProviderConfig"

// pluginAPIVersions are the versions of the plugins' API (the
// CredentialProviderRequest and Response) a provider may name.
var pluginAPIVersions = []string{
	credentialproviderv1.SchemeGroupVersion.String(),
	credentialproviderv1alpha1.SchemeGroupVersion.String(),
	credentialproviderv1beta1.SchemeGroupVersion.String(),
}

// LoadConfig reads a CredentialProviderConfig file (JSON or YAML), or
// every *.json, *.yaml and *.yml file of a directory (not below it) in
// lexical order, merged, as upstream's readCredentialProviderConfig. A
// provider name given twice across files is an error.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return nil, fmt.Errorf("credential provider config path is empty")
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("unable to access path %q: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("unable to read directory %q: %w", path, err)
		}
		files = nil
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".json", ".yaml", ".yml":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("no configuration files found in directory %q", path)
		}
	}
	merged := &Config{}
	seen := sets.New[string]()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("unable to read file %q: %w", f, err)
		}
		c, err := decodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("error decoding config %q: %w", f, err)
		}
		for _, p := range c.Providers {
			if seen.Has(p.Name) {
				return nil, fmt.Errorf("duplicate provider name %q found in configuration file(s)", p.Name)
			}
			seen.Insert(p.Name)
			merged.Providers = append(merged.Providers, p)
		}
	}
	return merged, nil
}

// decodeConfig decodes one file strictly (an unknown or duplicate field
// is an error, as upstream's strict codec), by the version it names.
func decodeConfig(data []byte) (*Config, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "" {
		// Not quoted, as upstream's decoder does: the env may hold secrets.
		return nil, errors.New("object 'Kind' is missing")
	}
	out := &Config{}
	var err error
	switch gv := tm.APIVersion; {
	case tm.Kind != configKind:
		return nil, fmt.Errorf("no kind %q is registered for version %q", tm.Kind, gv)
	case gv == kubeletconfigv1.SchemeGroupVersion.String():
		err = yaml.UnmarshalStrict(data, out)
	case gv == kubeletconfigv1beta1.SchemeGroupVersion.String():
		err = older(data, &kubeletconfigv1beta1.CredentialProviderConfig{}, out)
	case gv == kubeletconfigv1alpha1.SchemeGroupVersion.String():
		err = older(data, &kubeletconfigv1alpha1.CredentialProviderConfig{}, out)
	default:
		return nil, fmt.Errorf("no kind %q is registered for version %q", tm.Kind, gv)
	}
	if err != nil {
		return nil, fmt.Errorf("strict decoding error: %w", err)
	}
	return out, nil
}

// older decodes an older version's file strictly into its own type (a
// field it lacks, as tokenAttributes, is an error), then into v1, whose
// fields are a superset of its.
func older(data []byte, typed any, out *Config) error {
	if err := yaml.UnmarshalStrict(data, typed); err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

// cacheTypes are tokenAttributes' cacheType values.
var cacheTypes = sets.New(string(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType),
	string(kubeletconfigv1.TokenServiceAccountTokenCacheType))

// ValidateConfig is upstream's validateCredentialProviderConfig, with the
// KubeletServiceAccountTokenForCredentialProviders gate's state, and its
// error messages.
func ValidateConfig(c *Config, saTokensGate bool) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("providers")
	if len(c.Providers) == 0 {
		errs = append(errs, field.Required(path, "at least 1 item in plugins is required"))
	}
	seen := sets.New[string]()
	for _, p := range c.Providers {
		if strings.Contains(p.Name, "/") {
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot contain '/'"))
		}
		if strings.Contains(p.Name, " ") {
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, "provider name cannot contain spaces"))
		}
		if p.Name == "." || p.Name == ".." {
			errs = append(errs, field.Invalid(path.Child("name"), p.Name, fmt.Sprintf("provider name cannot be '%s'", p.Name)))
		}
		if seen.Has(p.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
		}
		seen.Insert(p.Name)
		if p.APIVersion == "" {
			errs = append(errs, field.Required(path.Child("apiVersion"), ""))
		} else if !slices.Contains(pluginAPIVersions, p.APIVersion) {
			errs = append(errs, field.NotSupported(path.Child("apiVersion"), p.APIVersion, pluginAPIVersions))
		}
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(path.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for _, m := range p.MatchImages {
			if _, err := url.Parse("https://" + m); err != nil {
				errs = append(errs, field.Invalid(path.Child("matchImages"), m, "match image is invalid: "+err.Error()))
			}
		}
		if p.DefaultCacheDuration == nil {
			errs = append(errs, field.Required(path.Child("defaultCacheDuration"), ""))
		} else if p.DefaultCacheDuration.Duration < 0 {
			errs = append(errs, field.Invalid(path.Child("defaultCacheDuration"), p.DefaultCacheDuration, "must be greater than or equal to 0"))
		}
		if p.TokenAttributes != nil {
			errs = append(errs, validateTokenAttributes(path.Child("tokenAttributes"), &p, saTokensGate)...)
		}
	}
	return errs
}

// validateTokenAttributes is the part of upstream's validation about a
// provider's service account tokens.
func validateTokenAttributes(path *field.Path, p *Provider, gate bool) field.ErrorList {
	var errs field.ErrorList
	ta := p.TokenAttributes
	if !gate {
		errs = append(errs, field.Forbidden(path, "tokenAttributes is not supported when KubeletServiceAccountTokenForCredentialProviders feature gate is disabled"))
	}
	if ta.ServiceAccountTokenAudience == "" {
		errs = append(errs, field.Required(path.Child("serviceAccountTokenAudience"), ""))
	}
	if ta.RequireServiceAccount == nil {
		errs = append(errs, field.Required(path.Child("requireServiceAccount"), ""))
	}
	if v1 := credentialproviderv1.SchemeGroupVersion.String(); p.APIVersion != v1 {
		errs = append(errs, field.Forbidden(path, "tokenAttributes is only supported for "+v1+" API version"))
	}
	if ta.RequireServiceAccount != nil && !*ta.RequireServiceAccount && len(ta.RequiredServiceAccountAnnotationKeys) > 0 {
		errs = append(errs, field.Forbidden(path.Child("requiredServiceAccountAnnotationKeys"), "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"))
	}
	errs = append(errs, validateAnnotationKeys(path.Child("requiredServiceAccountAnnotationKeys"), ta.RequiredServiceAccountAnnotationKeys)...)
	errs = append(errs, validateAnnotationKeys(path.Child("optionalServiceAccountAnnotationKeys"), ta.OptionalServiceAccountAnnotationKeys)...)
	if both := sets.New(ta.RequiredServiceAccountAnnotationKeys...).Intersection(sets.New(ta.OptionalServiceAccountAnnotationKeys...)); both.Len() > 0 {
		errs = append(errs, field.Invalid(path, sets.List(both), "annotation keys cannot be both required and optional"))
	}
	switch {
	case ta.CacheType == "":
		errs = append(errs, field.Required(path.Child("cacheType"), "cacheType is required to be set when tokenAttributes is specified. Supported values are: "+strings.Join(sets.List(cacheTypes), ", ")))
	case !cacheTypes.Has(string(ta.CacheType)):
		errs = append(errs, field.NotSupported(path.Child("cacheType"), ta.CacheType, sets.List(cacheTypes)))
	}
	return errs
}

// validateAnnotationKeys checks annotation keys as the API checks an
// object's (qualified names, case aside), and that none is repeated.
func validateAnnotationKeys(path *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(path, k))
		}
		seen.Insert(k)
	}
	return errs
}
