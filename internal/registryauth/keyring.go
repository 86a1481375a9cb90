// Package registryauth turns a pod's image pull secrets into the
// credentials of a CRI PullImage, with upstream's keyring rules
// (pkg/credentialprovider, pkg/credentialprovider/secrets): a registry
// named by host, port and path prefix, wildcards in the host, the most
// specific registry first, Docker Hub's credentials for Docker Hub's
// images. It does no I/O: the caller reads the secrets.
package registryauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// Keyring holds the credentials of a set of pull secrets, indexed by
// registry. The zero value holds none.
type Keyring struct {
	// index is every registry key, without duplicates, in reverse
	// lexical order: a key sorts after its own prefixes, so the more
	// specific of two overlapping registries (quay.io/coreos, quay.io)
	// is looked at first.
	index []string
	creds map[string][]tracked
}

// tracked is an entry with where it comes from, as upstream's
// TrackedAuthConfig.
type tracked struct {
	entry
	source  SecretRef
	account ServiceAccountRef
	hash    string
}

// SecretRef names the pull secret a credential comes from: its
// coordinates in the records of pulled images (ImagePullSecret).
type SecretRef struct {
	UID, Namespace, Name string
}

// ServiceAccountRef names the service account a credential provider
// plugin in service account token mode gave a credential for: its
// coordinates in the records of pulled images (ImagePullServiceAccount).
type ServiceAccountRef struct {
	UID, Namespace, Name string
}

// Credential is one credential to pull an image with, and where it comes
// from.
type Credential struct {
	Auth *runtimeapi.AuthConfig
	// Secret is the pull secret that holds it; the zero SecretRef for a
	// credential provider plugin's.
	Secret SecretRef
	// ServiceAccount is the service account a plugin gave it for (in
	// service account token mode); the zero ServiceAccountRef otherwise.
	ServiceAccount ServiceAccountRef
	// Hash is upstream's CredentialHash of it (hashAuthConfig): the
	// SHA-256, in hex, of the JSON of its username, password and email.
	// Two secrets with the same credentials have the same hash.
	Hash string
}

// FromSecret reports whether the credential comes from a pull secret
// rather than from a credential provider plugin.
func (c *Credential) FromSecret() bool { return c.Secret != SecretRef{} }

// FromServiceAccount reports whether a credential provider plugin gave
// the credential for a pod's service account.
func (c *Credential) FromServiceAccount() bool { return c.ServiceAccount != ServiceAccountRef{} }

// FromSecrets builds the keyring of a pod's pull secrets, in the order
// the pod lists them, as upstream's MakeDockerKeyring: a
// kubernetes.io/dockerconfigjson secret contributes the "auths" of its
// .dockerconfigjson, a kubernetes.io/dockercfg secret its .dockercfg;
// secrets of any other type, or without that key, or with it empty, are
// ignored. A docker config that does not decode fails the whole keyring,
// as upstream; the error names the secret, never its content.
func FromSecrets(secrets []v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	for i := range secrets {
		s := &secrets[i]
		var cfg dockerConfig
		switch data := s.Data; {
		case s.Type == v1.SecretTypeDockerConfigJson && len(data[v1.DockerConfigJsonKey]) > 0:
			var doc dockerConfigJSON
			if err := json.Unmarshal(data[v1.DockerConfigJsonKey], &doc); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %s: %w", s.Namespace, s.Name, v1.DockerConfigJsonKey, parseError(err))
			}
			cfg = doc.Auths
		case s.Type == v1.SecretTypeDockercfg && len(data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(data[v1.DockerConfigKey], &cfg); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %s: %w", s.Namespace, s.Name, v1.DockerConfigKey, parseError(err))
			}
		default:
			continue
		}
		k.add(cfg, SecretRef{UID: string(s.UID), Namespace: s.Namespace, Name: s.Name}, ServiceAccountRef{})
	}
	return k, nil
}

// AddProvided adds the credentials a credential provider plugin gave,
// by registry (host, host/path, wildcards in the host, as a docker
// config's names), without a pull secret as their source. As upstream,
// an image pulled with them is one every pod of the node may use, unless
// the plugin gave them for a service account (account, in service
// account token mode): then only the pods of that account may.
func (k *Keyring) AddProvided(auth map[string]credentialproviderv1.AuthConfig, account ServiceAccountRef) {
	cfg := make(dockerConfig, len(auth))
	for name, a := range auth {
		cfg[name] = configEntry{entry: entry{Username: a.Username, Password: a.Password}}
	}
	k.add(cfg, SecretRef{}, account)
}

// add indexes a docker config's entries, as upstream's
// BasicDockerKeyring.Add: the scheme is dropped, a path of /v1/ or /v2/
// means the whole host, and an entry whose name is no URL is skipped.
// Upstream walks the config's map in Go's random order; here the entries
// of one secret are taken in the order of their names, so that two names
// for the same registry (https://r and r) give their credentials in a
// stable order.
func (k *Keyring) add(cfg dockerConfig, src SecretRef, account ServiceAccountRef) {
	if k.creds == nil {
		k.creds = map[string][]tracked{}
	}
	names := make([]string, 0, len(cfg))
	for name := range cfg {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		key, ok := registryKey(name)
		if !ok {
			continue
		}
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		e := cfg[name]
		k.creds[key] = append(k.creds[key], tracked{entry: e.entry, source: src, account: account, hash: credentialHash(e)})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// registryKey is the index key of a docker config's registry name: host
// and port, and the path when there is one.
func registryKey(name string) (string, bool) {
	if !strings.HasPrefix(name, "https://") && !strings.HasPrefix(name, "http://") {
		name = "https://" + name
	}
	u, err := url.Parse(name)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

// defaultRegistryKey is where a docker config keeps Docker Hub's
// credentials (https://index.docker.io/v1/).
const defaultRegistryKey = "index.docker.io"

// Lookup returns the credentials to pull image with, to be tried in
// order until one succeeds, as upstream's puller does: those of every
// registry key that matches the image's repository, the most specific key
// first, and when none does, Docker Hub's for an image of Docker Hub. Nil
// when there are none: the image is pulled anonymously. Each call returns
// new AuthConfigs.
func (k *Keyring) Lookup(image string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, c := range k.LookupTracked(image) {
		out = append(out, c.Auth)
	}
	return out
}

// LookupTracked is Lookup with where each credential comes from.
func (k *Keyring) LookupTracked(image string) []Credential {
	var out []Credential
	for _, t := range k.lookupTracked(repository(image)) {
		out = append(out, Credential{Auth: &runtimeapi.AuthConfig{Username: t.Username, Password: t.Password},
			Secret: t.source, ServiceAccount: t.account, Hash: t.hash})
	}
	return out
}

// lookup is lookupTracked without the sources.
func (k *Keyring) lookup(repo string) []entry {
	var out []entry
	for _, t := range k.lookupTracked(repo) {
		out = append(out, t.entry)
	}
	return out
}

// lookupTracked is upstream's BasicDockerKeyring.Lookup on a repository
// name.
func (k *Keyring) lookupTracked(repo string) []tracked {
	if k == nil {
		return nil
	}
	var out []tracked
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) > 0 {
		return out
	}
	if isDefaultRegistry(repo) {
		return k.creds[defaultRegistryKey]
	}
	return nil
}

// isDefaultRegistry reports whether a repository is pulled from Docker
// Hub: it has no host part (a first component without "." or ":"), or
// its host is docker.io or index.docker.io.
func isDefaultRegistry(repo string) bool {
	first, _, hasPath := strings.Cut(repo, "/")
	switch {
	case first == "":
		return false
	case !hasPath, first == "docker.io", first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// URLsMatch is urlsMatch, for a credential provider's matchImages.
func URLsMatch(glob, target string) bool { return urlsMatch(glob, target) }

// urlsMatch reports whether the target (host[:port][/path]) matches the
// glob, as upstream's URLsMatch: the same port, the same number of host
// labels, each matching the glob's label as a filepath pattern
// (*.example.com), and the glob's path a prefix of the target's.
// Wildcards are not supported in ports and paths.
func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gLabels, gPort := splitHost(g.Host)
	tLabels, tPort := splitHost(t.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, pattern := range gLabels {
		if ok, err := filepath.Match(pattern, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits host[:port] into its labels and its port.
func splitHost(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// credentialHash is upstream's hashAuthConfig of a pull secret's entry:
// the SHA-256 of the JSON of the AuthConfig upstream's keyring makes of
// it (username, password and email; empty fields left out), so that a
// record written by either kubelet matches the same secret in the other.
func credentialHash(e configEntry) string {
	raw, err := json.Marshal(struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Auth     string `json:"auth,omitempty"`
		Email    string `json:"email,omitempty"`
	}{Username: e.Username, Password: e.Password, Email: e.Email})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
