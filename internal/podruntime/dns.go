package podruntime

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Resolver limits of the API validation (MaxDNSNameservers,
// MaxDNSSearchPaths, MaxDNSSearchListChars): a resolv.conf beyond them
// would not work in the container.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// podDNSConfig is upstream's Configurer.GetPodDNS.
func podDNSConfig(pod *v1.Pod, opts Options) (*runtimeapi.DNSConfig, error) {
	host, err := hostDNSConfig(opts.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("DNS config of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	cfg := host
	switch dnsPolicy(pod) {
	case v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case v1.DNSClusterFirst:
		if len(opts.ClusterDNS) != 0 {
			cfg.Servers = slices.Clone(opts.ClusterDNS)
			cfg.Searches = clusterSearches(host.Searches, pod.Namespace, opts.ClusterDomain)
			cfg.Options = []string{"ndots:5"}
			break
		}
		// Without a cluster DNS, ClusterFirst falls back to Default.
		fallthrough
	case v1.DNSDefault:
		if opts.ResolvConf == "" {
			cfg.Servers = []string{"127.0.0.1"}
			cfg.Searches = []string{"."}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
	}
	cfg.Searches = fitSearches(cfg.Searches)
	return cfg, nil
}

// dnsPolicy resolves the pod's policy to None, ClusterFirst or Default; an
// unknown policy is ClusterFirst, as upstream.
func dnsPolicy(pod *v1.Pod) v1.DNSPolicy {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return v1.DNSNone
	case v1.DNSClusterFirstWithHostNet:
		return v1.DNSClusterFirst
	case v1.DNSDefault:
		return v1.DNSDefault
	case v1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return v1.DNSDefault
		}
	}
	return v1.DNSClusterFirst
}

func hostDNSConfig(resolvConf string) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{}
	if resolvConf == "" {
		return cfg, nil
	}
	f, err := os.Open(resolvConf)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search":
			cfg.Searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = mergeDNSOptions(cfg.Options, parseOptions(fields[1:]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", resolvConf, err)
	}
	return cfg, nil
}

func clusterSearches(hostSearches []string, namespace, domain string) []string {
	if domain == "" {
		return hostSearches
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return omitDuplicates(append(s, hostSearches...))
}

func parseOptions(opts []string) []v1.PodDNSConfigOption {
	out := make([]v1.PodDNSConfigOption, 0, len(opts))
	for _, o := range opts {
		name, value, ok := strings.Cut(o, ":")
		opt := v1.PodDNSConfigOption{Name: name}
		if ok {
			opt.Value = &value
		}
		out = append(out, opt)
	}
	return out
}

// mergeDNSOptions overrides existing options by name. The result is sorted
// so the sandbox config does not depend on map order.
func mergeDNSOptions(existing []string, add []v1.PodDNSConfigOption) []string {
	m := map[string]string{}
	for _, o := range existing {
		name, value, _ := strings.Cut(o, ":")
		m[name] = value
	}
	for _, o := range add {
		m[o.Name] = ""
		if o.Value != nil {
			m[o.Name] = *o.Value
		}
	}
	out := make([]string, 0, len(m))
	for name, value := range m {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func omitDuplicates(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func fitSearches(s []string) []string {
	if len(s) > maxDNSSearchPaths {
		s = s[:maxDNSSearchPaths]
	}
	for len(s) > 0 && len(strings.Join(s, " ")) > maxDNSSearchListChars {
		s = s[:len(s)-1]
	}
	return s
}
