package credprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
)

func TestLoadConfig(t *testing.T) {
	const v1Config = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: test
  matchImages: ["*.registry.io", "registry.io:5000/path"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: ["--v=5"]
  env: [{name: A, value: b}]
`
	tests := []struct {
		name    string
		files   map[string]string // under a directory; "" alone: the path is that file
		names   []string          // the providers read
		wantErr string
	}{
		{name: "v1 file", files: map[string]string{"": v1Config}, names: []string{"test"}},
		{name: "v1beta1 JSON", files: map[string]string{"": `{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "CredentialProviderConfig",
			"providers": [{"name": "b", "matchImages": ["r.io"], "defaultCacheDuration": "1m", "apiVersion": "credentialprovider.kubelet.k8s.io/v1beta1"}]}`},
			names: []string{"b"}},
		{name: "v1alpha1", files: map[string]string{"": "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: CredentialProviderConfig\nproviders: [{name: a, matchImages: [r.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1, env: [{name: X, value: z}]}]\n"},
			names: []string{"a"}},
		{name: "directory merged in lexical order", files: map[string]string{
			"b.yaml": strings.ReplaceAll(v1Config, "name: test", "name: second"), "a.json": strings.ReplaceAll(v1Config, "name: test", "name: first"),
			"c.txt": "ignored"}, names: []string{"first", "second"}},
		{name: "directory without config files", files: map[string]string{"x.txt": "x"}, wantErr: "no configuration files found in directory"},
		{name: "duplicate names across files", files: map[string]string{"a.yaml": v1Config, "b.yaml": v1Config},
			wantErr: `duplicate provider name "test" found in configuration file(s)`},
		{name: "wrong kind", files: map[string]string{"": "apiVersion: kubelet.config.k8s.io/v1\nkind: WrongKind\n"},
			wantErr: `no kind "WrongKind" is registered for version "kubelet.config.k8s.io/v1"`},
		{name: "unknown version", files: map[string]string{"": "apiVersion: foobar/v1alpha1\nkind: CredentialProviderConfig\n"},
			wantErr: `no kind "CredentialProviderConfig" is registered for version "foobar/v1alpha1"`},
		{name: "unknown field", files: map[string]string{"": v1Config + "  unknownField: 1\n"}, wantErr: `strict decoding error`},
		{name: "tokenAttributes in v1beta1", files: map[string]string{"": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: CredentialProviderConfig\nproviders: [{name: a, tokenAttributes: {}}]\n"},
			wantErr: `unknown field "tokenAttributes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := dir
			for name, content := range tt.files {
				if name == "" {
					path = filepath.Join(dir, "config.yaml")
					name = "config.yaml"
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := LoadConfig(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range c.Providers {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.names, ",") {
				t.Fatalf("providers %v, want %v", names, tt.names)
			}
			if tt.name == "v1alpha1" && (len(c.Providers[0].Env) != 1 || c.Providers[0].Env[0].Value != "z") {
				t.Errorf("env not converted: %+v", c.Providers[0].Env)
			}
		})
	}
}

func TestValidateConfig(t *testing.T) {
	valid := func(mod func(p *Provider)) *Config {
		p := Provider{Name: "foobar", MatchImages: []string{"k8s.gcr.io"}, DefaultCacheDuration: &metav1.Duration{Duration: time.Minute},
			APIVersion: "credentialprovider.kubelet.k8s.io/v1"}
		if mod != nil {
			mod(&p)
		}
		return &Config{Providers: []Provider{p}}
	}
	yes, no := true, false
	tokens := func(ta kubeletconfigv1.ServiceAccountTokenAttributes) func(p *Provider) {
		return func(p *Provider) { p.TokenAttributes = &ta }
	}
	tests := []struct {
		name   string
		config *Config
		gate   bool
		want   string
	}{
		{name: "valid", config: valid(nil)},
		{name: "no providers", config: &Config{}, want: "providers: Required value: at least 1 item in plugins is required"},
		{name: "no matchImages", config: valid(func(p *Provider) { p.MatchImages = nil }),
			want: "providers.matchImages: Required value: at least 1 item in matchImages is required"},
		{name: "no defaultCacheDuration", config: valid(func(p *Provider) { p.DefaultCacheDuration = nil }),
			want: "providers.defaultCacheDuration: Required value"},
		{name: "name with /", config: valid(func(p *Provider) { p.Name = "foo/../bar" }),
			want: `providers.name: Invalid value: "foo/../bar": provider name cannot contain '/'`},
		{name: "name .", config: valid(func(p *Provider) { p.Name = "." }), want: `providers.name: Invalid value: ".": provider name cannot be '.'`},
		{name: "name ..", config: valid(func(p *Provider) { p.Name = ".." }), want: `providers.name: Invalid value: "..": provider name cannot be '..'`},
		{name: "name with a space", config: valid(func(p *Provider) { p.Name = "foo bar" }),
			want: `providers.name: Invalid value: "foo bar": provider name cannot contain spaces`},
		{name: "duplicate names", config: &Config{Providers: append(valid(nil).Providers, valid(nil).Providers...)},
			want: `providers.name: Duplicate value: "foobar"`},
		{name: "no apiVersion", config: valid(func(p *Provider) { p.APIVersion = "" }), want: "providers.apiVersion: Required value"},
		{name: "unknown apiVersion", config: valid(func(p *Provider) { p.APIVersion = "credentialprovider.kubelet.k8s.io/v1alpha0" }),
			want: `providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v1alpha0": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"`},
		{name: "negative defaultCacheDuration", config: valid(func(p *Provider) { p.DefaultCacheDuration.Duration = -time.Minute }),
			want: `providers.defaultCacheDuration: Invalid value: "-1m0s": must be greater than or equal to 0`},
		{name: "bad matchImage", config: valid(func(p *Provider) { p.MatchImages = []string{"%invalid%"} }),
			want: `providers.matchImages: Invalid value: "%invalid%": match image is invalid: parse "https://%invalid%": invalid URL escape "%in"`},
		{name: "tokenAttributes with the gate off", config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes, CacheType: "Token"})),
			want: `providers.tokenAttributes: Forbidden: tokenAttributes is not supported when KubeletServiceAccountTokenForCredentialProviders feature gate is disabled`},
		{name: "tokenAttributes without audience", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			RequireServiceAccount: &yes, CacheType: "Token"})), want: `providers.tokenAttributes.serviceAccountTokenAudience: Required value`},
		{name: "tokenAttributes without cacheType", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes})),
			want: `providers.tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`},
		{name: "tokenAttributes with a bad cacheType", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes, CacheType: "invalid-cache-type"})),
			want: `providers.tokenAttributes.cacheType: Unsupported value: "invalid-cache-type": supported values: "ServiceAccount", "Token"`},
		{name: "tokenAttributes without requireServiceAccount", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", CacheType: "Token"})), want: `providers.tokenAttributes.requireServiceAccount: Required value`},
		{name: "required annotations without requireServiceAccount", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &no, CacheType: "Token", RequiredServiceAccountAnnotationKeys: []string{"a/b"}})),
			want: `providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`},
		{name: "an annotation both required and optional", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes, CacheType: "Token",
			RequiredServiceAccountAnnotationKeys: []string{"a/b"}, OptionalServiceAccountAnnotationKeys: []string{"a/b"}})),
			want: `providers.tokenAttributes: Invalid value: ["a/b"]: annotation keys cannot be both required and optional`},
		{name: "tokenAttributes for v1beta1 plugins", gate: true, config: valid(func(p *Provider) {
			p.APIVersion = "credentialprovider.kubelet.k8s.io/v1beta1"
			tokens(kubeletconfigv1.ServiceAccountTokenAttributes{ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes, CacheType: "Token"})(p)
		}), want: `providers.tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`},
		{name: "valid tokenAttributes", gate: true, config: valid(tokens(kubeletconfigv1.ServiceAccountTokenAttributes{
			ServiceAccountTokenAudience: "a", RequireServiceAccount: &yes, CacheType: "ServiceAccount"}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if errs := ValidateConfig(tt.config, tt.gate); len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
