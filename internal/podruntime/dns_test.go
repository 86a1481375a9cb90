package podruntime

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodDNSLimits ports the intent of upstream's
// TestFormDNSSearchFitsLimits and TestFormDNSNameserversFitsLimits: what
// is cut from the pod's resolv.conf, and the DNSConfigForming events.
func TestPodDNSLimits(t *testing.T) {
	// 2048 characters: 128 + 15 * 127, and 15 separators.
	// The paths differ: duplicates are dropped before the limits.
	list2048 := []string{strings.Repeat("A", 128)}
	for i := range 15 {
		list2048 = append(list2048, strings.Repeat(string(rune('B'+i)), 127))
	}
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat(string(rune('a'+i%26)), 1+i/26)
		}
		return out
	}
	const searchMsg = "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "
	const serverMsg = "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "
	tests := []struct {
		name              string
		servers, searches []string
		wantServers       []string
		wantSearches      []string
		events            []string
	}{
		{"within the limits", []string{"1.1.1.1", "2.2.2.2"}, []string{"a", "b"},
			[]string{"1.1.1.1", "2.2.2.2"}, []string{"a", "b"}, nil},
		{"three nameservers", []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, nil,
			[]string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, nil, nil},
		{"four nameservers", []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}, nil,
			[]string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, nil, []string{serverMsg + "1.1.1.1 2.2.2.2 3.3.3.3"}},
		{"a search path longer than a domain name", nil, []string{"AAA", strings.Repeat("B", 256), "BBB"},
			nil, []string{"AAA", "BBB"}, []string{searchMsg + "AAA BBB"}},
		{"2048 characters", nil, list2048, nil, list2048, nil},
		{"2050 characters", nil, append(slices.Clone(list2048), "B"),
			nil, list2048, []string{searchMsg + strings.Join(list2048, " ")}},
		{"32 search paths", nil, many(32), nil, many(32), nil},
		{"33 search paths", nil, many(33), nil, many(32), []string{searchMsg + strings.Join(many(32), " ")}},
		{"both cut", []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}, many(40),
			[]string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, many(32),
			[]string{serverMsg + "1.1.1.1 2.2.2.2 3.3.3.3", searchMsg + strings.Join(many(32), " ")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := basePod()
			pod.Spec.DNSPolicy = v1.DNSNone
			pod.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: tt.servers, Searches: tt.searches}
			cfg, evs := podDNS(pod, &runtimeapi.DNSConfig{}, Options{ResolvConf: "/etc/resolv.conf"})
			if !slices.Equal(cfg.Servers, tt.wantServers) || !slices.Equal(cfg.Searches, tt.wantSearches) {
				t.Errorf("servers %v searches %v\nwant %v %v", cfg.Servers, cfg.Searches, tt.wantServers, tt.wantSearches)
			}
			var got []string
			for _, e := range evs {
				if e.node || e.reason != "DNSConfigForming" {
					t.Errorf("event %+v", e)
				}
				got = append(got, e.message)
			}
			if !reflect.DeepEqual(got, tt.events) {
				t.Errorf("events %q\nwant %q", got, tt.events)
			}
		})
	}
}

// TestResolvConfLimits ports the intent of upstream's
// TestCheckLimitsForResolvConf: the host's search line against the limits,
// less the cluster's three paths when a cluster domain is set.
func TestResolvConfLimits(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "d" + strings.Repeat("x", i)
		}
		return out
	}
	const f = "/etc/resolv.conf"
	tests := []struct {
		name     string
		searches []string
		domain   string
		want     string
	}{
		{"no search line", nil, "cluster.local", ""},
		{"29 paths with a cluster domain", many(29), "cluster.local", ""},
		{"30 paths with a cluster domain", many(30), "cluster.local", "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!"},
		{"30 paths without a cluster domain", many(30), "", ""},
		{"33 paths without a cluster domain", many(33), "", "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 32 domains!"},
		{"a path of 254 characters", []string{"a", strings.Repeat("b", 254)}, "", `Resolv.conf file "/etc/resolv.conf" contains a search path which length is more than allowed 253 chars!`},
		{"a line of 2049 characters", []string{strings.Repeat("a", 253), strings.Repeat("b", 253), strings.Repeat("c", 253), strings.Repeat("d", 253),
			strings.Repeat("e", 253), strings.Repeat("f", 253), strings.Repeat("g", 253), strings.Repeat("h", 253), "ijklmnopqrstuvwxy"}, "",
			"Resolv.conf file '/etc/resolv.conf' contains search line which length is more than allowed 2048 chars!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolvConfLimits(f, tt.searches, tt.domain); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := ResolvConfLimits("/nonexistent/resolv.conf", ""); got != "open /nonexistent/resolv.conf: no such file or directory" {
		t.Errorf("missing file: %q", got)
	}
	if got := ResolvConfLimits("", ""); got != "" {
		t.Errorf("no resolvConf: %q", got)
	}
}
