package credprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/actorlet/actorlet/internal/registryauth"
)

const (
	// execTimeout is upstream's catch-all bound on one run of a plugin:
	// room for a plugin to retry its own requests, never a run forever.
	execTimeout = time.Minute
	// purgeInterval is how often the expired answers of images never
	// asked about again are dropped, as upstream's cachePurgeInterval.
	purgeInterval = 15 * time.Minute
	// globalCacheKey caches an answer for every image; the angle
	// brackets keep it apart from any image or registry name.
	globalCacheKey = "<global>"
	// maxStderr bounds what of a failed plugin's stderr its error quotes.
	maxStderr = 4096
)

// Plugins are the credential provider plugins of a configuration, in
// its order. It is safe for concurrent use: the pods' pulls ask it in
// parallel.
type Plugins struct {
	plugins []*plugin
	log     zerolog.Logger
}

// New reads and validates the configuration at configPath and finds each
// provider's executable, named as the provider, in binDir; errors are
// upstream's (RegisterCredentialProviderPlugins), and fail the start.
// saTokensGate is KubeletServiceAccountTokenForCredentialProviders;
// accounts, what providers with tokenAttributes read service accounts and
// their tokens from (nil without an API server).
func New(configPath, binDir string, saTokensGate bool, accounts ServiceAccounts, log zerolog.Logger) (*Plugins, error) {
	if _, err := os.Stat(binDir); err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("plugin binary directory %s did not exist", binDir)
		}
		return nil, fmt.Errorf("error inspecting binary directory %s: %w", binDir, err)
	}
	c, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	if errs := ValidateConfig(c, saTokensGate); len(errs) > 0 {
		return nil, fmt.Errorf("failed to validate credential provider config: %v", errs.ToAggregate())
	}
	ps := &Plugins{log: log}
	for _, p := range c.Providers {
		bin, err := exec.LookPath(filepath.Join(binDir, p.Name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
				return nil, fmt.Errorf("plugin binary executable %s did not exist", filepath.Join(binDir, p.Name))
			}
			return nil, fmt.Errorf("error inspecting binary executable %s: %w", bin, err)
		}
		pl := newPlugin(p, bin)
		if saTokensGate && p.TokenAttributes != nil && p.TokenAttributes.ServiceAccountTokenAudience != "" {
			pl.accounts = newServiceAccounts(p.TokenAttributes, accounts)
		}
		ps.plugins = append(ps.plugins, pl)
	}
	return ps, nil
}

// Lookup returns what the plugins give to pull image with for pod, in the
// order to try them, as upstream's external keyring: every plugin whose
// matchImages cover the image's repository is asked (or its cached
// answer used), and their credentials for the registries that match the
// image are returned, the most specific registry first. A plugin that
// fails is logged, with no credential in the line, and skipped: the pull
// goes on without it, as upstream.
func (ps *Plugins) Lookup(ctx context.Context, image string, pod Pod) []registryauth.Credential {
	if ps == nil || len(ps.plugins) == 0 {
		return nil
	}
	repo := registryauth.Repository(image)
	k := &registryauth.Keyring{}
	for _, p := range ps.plugins {
		auth, account, err := p.provide(ctx, repo, pod)
		if err != nil {
			e := ps.log.Error().Err(err).Str("provider", p.name).Str("image", repo)
			if p.accounts != nil {
				e = e.Str("pod", pod.Namespace+"/"+pod.Name).Str("podUID", string(pod.UID)).
					Str("serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName)
			}
			e.Msg("Failed to provide credentials for image")
			continue
		}
		k.AddProvided(auth, account)
	}
	return k.LookupTracked(image)
}

// plugin is one provider: its executable, what it matches, and the
// answers it gave that are still valid.
type plugin struct {
	name, apiVersion     string
	matchImages          []string
	defaultCacheDuration time.Duration
	// run runs the plugin with a request on stdin and returns its stdout.
	run func(ctx context.Context, request []byte) ([]byte, error)
	now func() time.Time
	// accounts is the provider's service account token mode; nil
	// without tokenAttributes.
	accounts *serviceAccounts

	mu        sync.Mutex
	cache     map[cacheKey]cached
	lastPurge time.Time
	// group runs the plugin once for concurrent asks about one image.
	group singleflight.Group
}

// cacheKey is where an answer is cached: the image, registry or global
// key the plugin named, and for a pod's service account, accountKey.
type cacheKey struct{ base, account string }

// cached is an answer of the plugin and when it expires.
type cached struct {
	auth    map[string]credentialproviderv1.AuthConfig
	expires time.Time
}

func newPlugin(p Provider, bin string) *plugin {
	env := os.Environ()
	for _, e := range p.Env {
		// After the kubelet's own, so that the configuration's win.
		env = append(env, e.Name+"="+e.Value)
	}
	pl := &plugin{name: p.Name, apiVersion: p.APIVersion, matchImages: p.MatchImages,
		defaultCacheDuration: p.DefaultCacheDuration.Duration, now: time.Now,
		cache: map[cacheKey]cached{}, lastPurge: time.Now()}
	pl.run = func(ctx context.Context, request []byte) ([]byte, error) {
		return execPlugin(ctx, bin, p.Args, env, request)
	}
	return pl
}

// matches reports whether the plugin is for the repository, as
// upstream's isImageAllowed.
func (p *plugin) matches(repo string) bool {
	for _, m := range p.matchImages {
		if registryauth.URLsMatch(m, repo) {
			return true
		}
	}
	return false
}

// provide is upstream's pluginProvider.provide: the plugin's credentials
// for repo, from the cache when an answer for the image, its registry or
// every image is still valid, else from a run of the plugin, cached under
// the key type it names for the duration it names (or the configuration's
// default; zero caches nothing). In service account token mode the plugin
// is told a token of the pod's service account for its audience and the
// account's annotations it asks for, and answers are cached per account
// (per token with the Token cache type); a pod without a service account
// gets nothing from a plugin that requires one, and nor does one whose
// account lacks a required annotation. The answer comes with the service
// account it was given for (the zero ServiceAccountRef outside that mode).
func (p *plugin) provide(ctx context.Context, repo string, pod Pod) (map[string]credentialproviderv1.AuthConfig, registryauth.ServiceAccountRef, error) {
	if !p.matches(repo) {
		return nil, registryauth.ServiceAccountRef{}, nil
	}
	var token, account string
	var annotations map[string]string
	// ref is the service account the answer is for, which the records of
	// pulled images name.
	var ref registryauth.ServiceAccountRef
	if p.accounts != nil && pod.ServiceAccountName == "" && p.accounts.require {
		return nil, registryauth.ServiceAccountRef{}, nil
	}
	if p.accounts != nil && pod.ServiceAccountName != "" {
		uid, a, err := p.accounts.account(ctx, pod.Namespace, pod.ServiceAccountName)
		var missing requiredAnnotationNotFound
		switch {
		case errors.As(err, &missing):
			return nil, registryauth.ServiceAccountRef{}, nil
		case err != nil:
			return nil, registryauth.ServiceAccountRef{}, fmt.Errorf("failed to get service account: %w", err)
		}
		if token, err = p.accounts.token(ctx, pod, uid); err != nil {
			return nil, registryauth.ServiceAccountRef{}, fmt.Errorf("failed to get service account token: %w", err)
		}
		annotations = a
		account = accountKey(pod, uid, annotations, p.accounts.cacheType, tokenHash(token))
		ref = registryauth.ServiceAccountRef{UID: string(uid), Namespace: pod.Namespace, Name: pod.ServiceAccountName}
	}
	if auth, ok := p.cached(repo, account); ok {
		return auth, ref, nil
	}
	// One run for concurrent asks about one image; in service account
	// token mode, about one image with one token and annotations.
	flight := repo
	if token != "" {
		flight = fmt.Sprintf("%q %q %s", repo, tokenHash(token), quotedAnnotations(annotations))
	}
	res, err, _ := p.group.Do(flight, func() (any, error) {
		// Shared by every pull waiting on it: one pod's pull ending
		// does not end the others' run.
		return p.exec(context.WithoutCancel(ctx), repo, token, annotations)
	})
	if err != nil {
		return nil, registryauth.ServiceAccountRef{}, fmt.Errorf("failed to get credential from external registry credential provider: %w", err)
	}
	resp := res.(*credentialproviderv1.CredentialProviderResponse)
	if token != "" && p.accounts.cacheType != kubeletconfigv1.TokenServiceAccountTokenCacheType {
		// Cached per account, a password that is the token would outlive
		// the token and serve other pods of the account.
		for _, a := range resp.Auth {
			if a.Password == token {
				return nil, registryauth.ServiceAccountRef{}, errors.New("credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'")
			}
		}
	}
	key := cacheKey{account: account}
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		key.base = repo
	case credentialproviderv1.RegistryPluginCacheKeyType:
		key.base = registryOf(repo)
	case credentialproviderv1.GlobalPluginCacheKeyType:
		key.base = globalCacheKey
	default:
		return nil, registryauth.ServiceAccountRef{}, fmt.Errorf("credential provider plugin did not return a valid cacheKeyType: %s", resp.CacheKeyType)
	}
	ttl := p.defaultCacheDuration
	if resp.CacheDuration != nil {
		ttl = resp.CacheDuration.Duration
	}
	if ttl > 0 {
		p.mu.Lock()
		p.cache[key] = cached{auth: resp.Auth, expires: p.now().Add(ttl)}
		p.mu.Unlock()
	}
	return resp.Auth, ref, nil
}

// cached is the answer still valid for repo and the service account key
// account ("" outside service account token mode): for the image, then
// its registry, then every image, as upstream looks. Expired answers of
// other images are dropped from time to time.
func (p *plugin) cached(repo, account string) (map[string]credentialproviderv1.AuthConfig, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if now.Sub(p.lastPurge) > purgeInterval {
		for k, c := range p.cache {
			if now.After(c.expires) {
				delete(p.cache, k)
			}
		}
		p.lastPurge = now
	}
	for _, base := range []string{repo, registryOf(repo), globalCacheKey} {
		k := cacheKey{base: base, account: account}
		c, ok := p.cache[k]
		if !ok {
			continue
		}
		if now.After(c.expires) {
			delete(p.cache, k)
			continue
		}
		return c.auth, true
	}
	return nil, false
}

// registryOf is the registry part of a repository (host[:port]), the
// key of a Registry answer.
func registryOf(repo string) string {
	registry, _, _ := strings.Cut(repo, "/")
	return registry
}

// exec asks the plugin about repo, with the service account's token and
// annotations in service account token mode, and decodes its answer,
// which must be of the plugin's API version. A response that does not
// decode is not quoted: it may hold credentials.
func (p *plugin) exec(ctx context.Context, repo, token string, annotations map[string]string) (*credentialproviderv1.CredentialProviderResponse, error) {
	request, err := json.Marshal(&credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{Kind: "CredentialProviderRequest", APIVersion: p.apiVersion}, Image: repo,
		ServiceAccountToken: token, ServiceAccountAnnotations: annotations})
	if err != nil {
		return nil, fmt.Errorf("failed to encode auth request: %w", err)
	}
	out, err := p.run(ctx, request)
	if err != nil {
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w", p.name, repo, err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(out, &tm); err != nil {
		return nil, errors.New("error reading GVK from response")
	}
	if tm.APIVersion != p.apiVersion {
		return nil, fmt.Errorf("apiVersion from credential plugin response did not match expected apiVersion:%s, actual apiVersion:%s", p.apiVersion, tm.APIVersion)
	}
	var resp credentialproviderv1.CredentialProviderResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil || resp.Kind != "CredentialProviderResponse" {
		return nil, errors.New("error decoding credential provider plugin response from stdout")
	}
	return &resp, nil
}

// execPlugin runs the plugin's executable with its arguments and
// environment, the request on stdin, bounded by execTimeout. Its error
// quotes the start of the plugin's stderr, as upstream, which is the
// plugin's to keep free of credentials.
func execPlugin(ctx context.Context, bin string, args, env []string, request []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, bytes.NewReader(request), &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		msg := stderr.String()
		if len(msg) > maxStderr {
			msg = msg[:maxStderr] + "..."
		}
		return nil, fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}
