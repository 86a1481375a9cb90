package podruntime

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podref"
)

// Resolver limits of the API validation (MaxDNSNameservers,
// MaxDNSSearchPaths, MaxDNSSearchListChars): a resolv.conf beyond them
// would not work in the container.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// dnsEvent is an event the pod's DNS configuration calls for: on the pod,
// or with node set on the Node.
type dnsEvent struct {
	node            bool
	reason, message string
}

// missingClusterDNS is upstream's message when a ClusterFirst pod meets a
// kubelet without clusterDNS.
var missingClusterDNS = fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)

// podDNSConfig is upstream's Configurer.GetPodDNS: it reads the host's
// resolv.conf and returns the pod's DNS configuration with the events it
// calls for.
func podDNSConfig(pod *v1.Pod, opts Options) (*runtimeapi.DNSConfig, []dnsEvent, error) {
	host, err := hostDNSConfig(opts.ResolvConf)
	if err != nil {
		return nil, nil, fmt.Errorf("DNS config of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	cfg, evs := podDNS(pod, host, opts)
	return cfg, evs, nil
}

// podDNS builds the pod's DNS configuration from the host's (host, which
// it changes), cut to the resolver limits: each cut, and a ClusterFirst
// pod without clusterDNS, is an event, as upstream's.
func podDNS(pod *v1.Pod, host *runtimeapi.DNSConfig, opts Options) (*runtimeapi.DNSConfig, []dnsEvent) {
	var evs []dnsEvent
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
		// Without a cluster DNS, ClusterFirst falls back to Default; upstream
		// says so on the Node and on the pod.
		evs = append(evs,
			dnsEvent{node: true, reason: events.MissingClusterDNS, message: missingClusterDNS},
			dnsEvent{reason: events.MissingClusterDNS, message: fmt.Sprintf("pod: %q. %s", podref.Desc(pod), missingClusterDNS)})
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
		evs = append(evs, dnsEvent{reason: events.DNSConfigForming,
			message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	var cut bool
	if cfg.Searches, cut = fitSearches(cfg.Searches); cut {
		evs = append(evs, dnsEvent{reason: events.DNSConfigForming,
			message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return cfg, evs
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

// fitSearches cuts the search line to the resolver limits, as upstream's
// formDNSSearchFitsLimits: the first maxDNSSearchPaths paths, less any
// longer than a domain name (some resolvers abort on one), less paths from
// the end until the line fits maxDNSSearchListChars. cut: it changed.
func fitSearches(s []string) (out []string, cut bool) {
	if len(s) > maxDNSSearchPaths {
		s, cut = s[:maxDNSSearchPaths], true
	}
	out = s[:0]
	for _, p := range s {
		if len(p) > validation.DNS1123SubdomainMaxLength {
			cut = true
			continue
		}
		out = append(out, p)
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > maxDNSSearchListChars {
		out, cut = out[:len(out)-1], true
	}
	return out, cut
}

// ResolvConfLimits is upstream's CheckLimitsForResolvConf, which it runs
// as its sync loop starts: the message of the Node's
// CheckLimitsForResolvConf event when the host's resolv.conf cannot be
// read or its search line is over the limits a pod's would meet, else "".
func ResolvConfLimits(resolvConf, clusterDomain string) string {
	if resolvConf == "" {
		return ""
	}
	host, err := hostDNSConfig(resolvConf)
	if err != nil {
		return err.Error()
	}
	return resolvConfLimits(resolvConf, host.Searches, clusterDomain)
}

// resolvConfLimits checks the host's search line: the cluster's three
// search paths come first in a ClusterFirst pod's, so they count.
func resolvConfLimits(resolvConf string, searches []string, clusterDomain string) string {
	paths := maxDNSSearchPaths
	if clusterDomain != "" {
		paths -= 3
	}
	if len(searches) > paths {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line consisting of more than %d domains!", resolvConf, paths)
	}
	for _, s := range searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			return fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", resolvConf, validation.DNS1123SubdomainMaxLength)
		}
	}
	if len(strings.Join(searches, " ")) > maxDNSSearchListChars {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line which length is more than allowed %d chars!", resolvConf, maxDNSSearchListChars)
	}
	return ""
}
