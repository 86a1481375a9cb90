// Package imagepull keeps upstream's records of the images the kubelet
// pulled and of the credentials each was pulled with
// (KubeletEnsureSecretPulledImages; upstream's pkg/kubelet/images/pullmanager),
// and decides with them whether a pod may use an image already on the
// node or must pull it again with its own credentials, so that the
// registry checks them.
//
// The decisions (the verification policy, the matching of a pod's pull
// secrets to a record, the merge of new credentials into a record) are
// pure functions; Manager holds the records in memory and writes each
// change to the files upstream's kubelet reads and writes under
// <root-dir>/image_manager, in upstream's format, so that either kubelet
// can follow the other on a node.
package imagepull

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Policy is an imagePullCredentialsVerificationPolicy with its
// preloadedImagesVerificationAllowlist: which images need their
// credentials verified before a pod may use them from the node.
type Policy struct {
	kind kubeletconfigv1beta1.ImagePullCredentialsVerificationPolicy
	// exact and prefixes are the allowlist's image names (without tag or
	// digest) and its "registry/path/*" patterns without the "*".
	exact    map[string]bool
	prefixes []string
}

// NewPolicy is the policy named kind ("" is upstream's default,
// NeverVerifyPreloadedImages), with the allowlist of
// NeverVerifyAllowlistedImages. An unknown policy or a bad pattern is an
// error naming it.
func NewPolicy(kind kubeletconfigv1beta1.ImagePullCredentialsVerificationPolicy, allowlist []string) (*Policy, error) {
	if kind == "" {
		kind = kubeletconfigv1beta1.NeverVerifyPreloadedImages
	}
	p := &Policy{kind: kind, exact: map[string]bool{}}
	switch kind {
	case kubeletconfigv1beta1.NeverVerify, kubeletconfigv1beta1.NeverVerifyPreloadedImages, kubeletconfigv1beta1.AlwaysVerify:
	case kubeletconfigv1beta1.NeverVerifyAllowlistedImages:
		for _, pattern := range allowlist {
			name, wildcard, err := allowlistPattern(pattern)
			if err != nil {
				return nil, err
			}
			if wildcard {
				p.prefixes = append(p.prefixes, name)
			} else {
				p.exact[name] = true
			}
		}
	default:
		return nil, fmt.Errorf("unknown image pull credential verification policy: %q", kind)
	}
	return p, nil
}

// ValidateAllowlist checks preloadedImagesVerificationAllowlist's
// patterns as upstream: an image name without tag or digest, or a prefix
// of names ending in "/*".
func ValidateAllowlist(patterns []string) error {
	for _, p := range patterns {
		if _, _, err := allowlistPattern(p); err != nil {
			return err
		}
	}
	return nil
}

// requireVerification is upstream's RequireCredentialVerificationForImage:
// whether the image (a container's image field) needs the pod's
// credentials checked, pulledByKubelet telling whether the kubelet pulled
// it (a record or an intent of it exists) rather than finding it
// preloaded on the node.
func (p *Policy) requireVerification(image string, pulledByKubelet bool) bool {
	switch p.kind {
	case kubeletconfigv1beta1.NeverVerify:
		return false
	case kubeletconfigv1beta1.NeverVerifyPreloadedImages:
		return pulledByKubelet
	case kubeletconfigv1beta1.NeverVerifyAllowlistedImages:
		return !p.allowlisted(image)
	default:
		return true
	}
}

// allowlisted reports whether the image is in the allowlist, compared as
// written (a familiar "ubuntu" is not "docker.io/library/ubuntu"), as
// upstream.
func (p *Policy) allowlisted(image string) bool {
	name, err := trimTagDigest(image)
	if err != nil {
		// As upstream, best effort: match what the user wrote.
		name = image
	}
	if p.exact[name] {
		return true
	}
	for _, prefix := range p.prefixes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// allowlistPattern is upstream's getAllowlistImagePattern: the name to
// compare and whether it is a prefix.
func allowlistPattern(pattern string) (string, bool, error) {
	if pattern != strings.TrimSpace(pattern) {
		return "", false, fmt.Errorf("leading/trailing spaces are not allowed: %s", pattern)
	}
	trimmed, wildcard := pattern, false
	if strings.HasSuffix(pattern, "/*") {
		trimmed, wildcard = strings.TrimSuffix(pattern, "*"), true
	}
	if trimmed == "" {
		return "", false, fmt.Errorf("the supplied pattern is too short: %s", pattern)
	}
	if strings.ContainsRune(trimmed, '*') {
		return "", false, fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s", pattern)
	}
	if wildcard {
		if len(trimmed) == 1 {
			return "", false, errors.New("at least registry hostname is required")
		}
		return trimmed, true, nil
	}
	name, err := trimTagDigest(trimmed)
	if err != nil {
		return "", false, fmt.Errorf("failed to parse as an image name: %w", err)
	}
	if name != trimmed {
		return "", false, fmt.Errorf("neither tag nor digest is accepted in an image reference: %s", pattern)
	}
	return trimmed, false, nil
}

// reference is the grammar of an image reference (distribution's
// reference.ReferenceRegexp, which upstream parses with): a name, made of
// an optional registry host[:port] and lower-case path components, then
// an optional tag and an optional digest.
var reference = func() *regexp.Regexp {
	const (
		domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain          = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
		pathComponent   = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
		name            = `(?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
		tag             = `[\w][\w.-]{0,127}`
		digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()

// maxNameLength is distribution's limit on a name's length.
const maxNameLength = 255

// trimTagDigest is upstream's trimImageTagDigest: the image's name as
// written, without its tag and digest (a record's credentials are per
// name). An image that is no valid reference is an error.
func trimTagDigest(image string) (string, error) {
	m := reference.FindStringSubmatch(image)
	if m == nil {
		return "", fmt.Errorf("invalid reference format: %q", image)
	}
	if len(m[1]) > maxNameLength {
		return "", fmt.Errorf("repository name must not be more than %d characters: %q", maxNameLength, image)
	}
	return m[1], nil
}
