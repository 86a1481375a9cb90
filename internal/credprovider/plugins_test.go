package credprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

const v1 = "credentialprovider.kubelet.k8s.io/v1"

// fakePlugin answers as a plugin would, counting its runs by image.
type fakePlugin struct {
	mu    sync.Mutex
	runs  map[string]int
	reply func(image string) string
}

func (f *fakePlugin) run(_ context.Context, request []byte) ([]byte, error) {
	var req credentialproviderv1.CredentialProviderRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, err
	}
	if req.APIVersion != v1 || req.Kind != "CredentialProviderRequest" {
		return nil, fmt.Errorf("bad request %s", request)
	}
	f.mu.Lock()
	f.runs[req.Image]++
	f.mu.Unlock()
	return []byte(f.reply(req.Image)), nil
}

func newTestPlugin(matchImages []string, defaultTTL time.Duration, reply func(string) string) (*plugin, *fakePlugin, *time.Time) {
	f := &fakePlugin{runs: map[string]int{}, reply: reply}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPlugin(Provider{Name: "test", APIVersion: v1, MatchImages: matchImages,
		DefaultCacheDuration: &metav1.Duration{Duration: defaultTTL}}, "/nonexistent")
	p.run, p.now, p.lastPurge = f.run, func() time.Time { return now }, now
	return p, f, &now
}

func response(cacheKeyType, cacheDuration string) func(string) string {
	return func(string) string {
		d := ""
		if cacheDuration != "" {
			d = fmt.Sprintf(`"cacheDuration": %q,`, cacheDuration)
		}
		return fmt.Sprintf(`{"kind": "CredentialProviderResponse", "apiVersion": %q, "cacheKeyType": %q, %s
			"auth": {"*.registry.io": {"username": "user", "password": "pass"}}}`, v1, cacheKeyType, d)
	}
}

func TestPluginMatchImages(t *testing.T) {
	tests := []struct {
		matchImages []string
		repo        string
		want        bool
	}{
		{[]string{"registry.io"}, "registry.io/foo", true},
		{[]string{"*.registry.io"}, "foo.registry.io/bar", true},
		{[]string{"*.registry.io"}, "registry.io/bar", false},
		{[]string{"*.*.registry.io"}, "a.b.registry.io/bar", true},
		{[]string{"*.registry.io:8080"}, "foo.registry.io:8080/bar", true},
		{[]string{"*.registry.io:8080"}, "foo.registry.io/bar", false},
		{[]string{"registry.io/foo"}, "registry.io/foo/bar", true},
		{[]string{"registry.io/foo"}, "registry.io/bar", false},
		{[]string{"other.io", "registry.io"}, "registry.io/bar", true},
		{[]string{"registry.io"}, "docker.io/library/busybox", false},
	}
	for _, tt := range tests {
		p, _, _ := newTestPlugin(tt.matchImages, 0, nil)
		if got := p.matches(tt.repo); got != tt.want {
			t.Errorf("matchImages %v, %s: %v, want %v", tt.matchImages, tt.repo, got, tt.want)
		}
	}
}

// TestPluginCache: an answer is reused, for the image, its registry or
// every image as the plugin's cacheKeyType says, until it expires.
func TestPluginCache(t *testing.T) {
	const img, sameRegistry, otherRegistry = "a.registry.io/img", "a.registry.io/other", "b.registry.io/img"
	tests := []struct {
		name          string
		reply         func(string) string
		defaultTTL    time.Duration
		after         time.Duration // between the first and the second asks
		second        string        // the second image asked about
		wantSecondRun bool
	}{
		{name: "Image: same image cached", reply: response("Image", "1m"), second: img},
		{name: "Image: not for another image", reply: response("Image", "1m"), second: sameRegistry, wantSecondRun: true},
		{name: "Registry: another image of the registry", reply: response("Registry", "1m"), second: sameRegistry},
		{name: "Registry: not for another registry", reply: response("Registry", "1m"), second: otherRegistry, wantSecondRun: true},
		{name: "Global: every image", reply: response("Global", "1m"), second: otherRegistry},
		{name: "expired", reply: response("Image", "1m"), after: time.Minute + time.Second, second: img, wantSecondRun: true},
		{name: "not yet expired", reply: response("Image", "1m"), after: time.Minute, second: img},
		{name: "cacheDuration 0 caches nothing", reply: response("Image", "0s"), defaultTTL: time.Hour, second: img, wantSecondRun: true},
		{name: "no cacheDuration: the default", reply: response("Image", ""), defaultTTL: time.Hour, after: 59 * time.Minute, second: img},
		{name: "no cacheDuration, default 0", reply: response("Image", ""), second: img, wantSecondRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f, now := newTestPlugin([]string{"*.registry.io"}, tt.defaultTTL, tt.reply)
			auth, _, err := p.provide(context.Background(), img, Pod{})
			if err != nil {
				t.Fatal(err)
			}
			if auth["*.registry.io"].Password != "pass" {
				t.Fatalf("auth %v", auth)
			}
			*now = now.Add(tt.after)
			if _, _, err := p.provide(context.Background(), tt.second, Pod{}); err != nil {
				t.Fatal(err)
			}
			if got := f.runs[tt.second] > 0 && (tt.second != img || f.runs[img] > 1); got != tt.wantSecondRun {
				t.Errorf("second ask ran the plugin: %v, want %v (runs %v)", got, tt.wantSecondRun, f.runs)
			}
		})
	}
}

func TestPluginPurge(t *testing.T) {
	p, _, now := newTestPlugin([]string{"*.registry.io"}, 0, response("Image", "1m"))
	if _, _, err := p.provide(context.Background(), "a.registry.io/x", Pod{}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(purgeInterval + time.Second)
	if _, ok := p.cached("a.registry.io/y", ""); ok || len(p.cache) != 0 {
		t.Errorf("expired answers kept: %v", p.cache)
	}
}

// TestPluginErrors: what a plugin answers wrong is an error that quotes
// none of its answer.
func TestPluginErrors(t *testing.T) {
	tests := []struct {
		name, reply string
		runErr      error
		want        string
	}{
		{name: "other apiVersion", reply: `{"kind": "CredentialProviderResponse", "apiVersion": "credentialprovider.kubelet.k8s.io/v1beta1", "cacheKeyType": "Image"}`,
			want: "apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1"},
		{name: "unknown field", reply: `{"kind": "CredentialProviderResponse", "apiVersion": "` + v1 + `", "cacheKeyType": "Image", "secret": "s3cr3t"}`,
			want: "error decoding credential provider plugin response from stdout"},
		{name: "other kind", reply: `{"kind": "Other", "apiVersion": "` + v1 + `", "cacheKeyType": "Image"}`,
			want: "error decoding credential provider plugin response from stdout"},
		{name: "not JSON", reply: `s3cr3t`, want: "error reading GVK from response"},
		{name: "bad cacheKeyType", reply: `{"kind": "CredentialProviderResponse", "apiVersion": "` + v1 + `", "cacheKeyType": "Pod"}`,
			want: "credential provider plugin did not return a valid cacheKeyType: Pod"},
		{name: "exec failed", runErr: errors.New("exit status 1: no token"),
			want: "error execing credential provider plugin test for image a.registry.io/x: exit status 1: no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, _ := newTestPlugin([]string{"*.registry.io"}, 0, func(string) string { return tt.reply })
			if tt.runErr != nil {
				p.run = func(context.Context, []byte) ([]byte, error) { return nil, tt.runErr }
			}
			_, _, err := p.provide(context.Background(), "a.registry.io/x", Pod{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestLookup: through a real executable, the plugins' credentials for the
// registries that match the image, the most specific first; a plugin
// that does not match is not run, and a failing one is skipped.
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "requests")
	script("good", `cat >> `+log+`; echo >> `+log+`
echo "$1 $ENV1" >> `+log+`
echo '{"kind": "CredentialProviderResponse", "apiVersion": "credentialprovider.kubelet.k8s.io/v1", "cacheKeyType": "Registry",
  "auth": {"r.io": {"username": "u1", "password": "p1"}, "r.io/team": {"username": "u2", "password": "p2"}, "other.io": {"username": "u3", "password": "p3"}}}'`)
	script("failing", `echo "no credentials here" >&2; exit 3`)
	script("unmatched", `echo unmatched >> `+log)
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- {name: good, matchImages: [r.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1, args: [first], env: [{name: ENV1, value: set}]}
- {name: failing, matchImages: [r.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}
- {name: unmatched, matchImages: [q.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	ps, err := New(config, dir, true, nil, zerolog.New(&logged))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		creds := ps.Lookup(context.Background(), "r.io/team/app:1.0", Pod{})
		var got []string
		for _, c := range creds {
			if c.FromSecret() {
				t.Errorf("a plugin's credential from a secret: %+v", c.Secret)
			}
			got = append(got, c.Auth.Username+":"+c.Auth.Password)
		}
		if strings.Join(got, ",") != "u2:p2,u1:p1" {
			t.Errorf("credentials %v, want u2:p2,u1:p1", got)
		}
	}
	requests := mustRead(t, log)
	want := `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"r.io/team/app"}` + "\nfirst set\n"
	if requests != want {
		t.Errorf("the plugins were asked\n%s\nwant (one run, the second from the cache)\n%s", requests, want)
	}
	if !strings.Contains(logged.String(), "no credentials here") || strings.Contains(logged.String(), "p1") {
		t.Errorf("log: %s", logged.String())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- {name: missing, matchImages: [r.io], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(config, filepath.Join(dir, "nope"), true, nil, zerolog.Nop()); err == nil || err.Error() != "plugin binary directory "+filepath.Join(dir, "nope")+" did not exist" {
		t.Errorf("missing bin dir: %v", err)
	}
	if _, err := New(config, dir, true, nil, zerolog.Nop()); err == nil || err.Error() != "plugin binary executable "+filepath.Join(dir, "missing")+" did not exist" {
		t.Errorf("missing plugin: %v", err)
	}
	if err := os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(config, dir, true, nil, zerolog.Nop()); err == nil || err.Error() != "failed to validate credential provider config: providers: Required value: at least 1 item in plugins is required" {
		t.Errorf("invalid config: %v", err)
	}
}
