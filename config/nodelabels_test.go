package config

import (
	"strings"
	"testing"
)

func TestValidateNodeLabels(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		want   []string // parts of the error; none: valid
	}{
		{name: "none", labels: map[string]string{}},
		{name: "own labels", labels: map[string]string{"example.com/team": "a", "tier": "gold"}},
		{name: "allowed set", labels: map[string]string{"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "m1",
			"kubernetes.io/hostname": "h", "beta.kubernetes.io/arch": "amd64"}},
		{name: "allowed namespaces", labels: map[string]string{"kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "", "node.kubernetes.io/z": "2"}},
		{name: "forbidden kubernetes.io", labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "a.b/c": "d"},
			want: []string{"unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/control-plane]",
				"must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io)",
				"specifically allowed set (beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone)"}},
		{name: "forbidden k8s.io, all named", labels: map[string]string{"k8s.io/a": "1", "x.k8s.io/b": "2"},
			want: []string{"labels specified with --node-labels: [k8s.io/a x.k8s.io/b]"}},
		{name: "kubernetes.io lookalike", labels: map[string]string{"notkubernetes.io/a": "1"}},
		{name: "invalid key", labels: map[string]string{"bad key": "v"},
			want: []string{"invalid node labels: 'bad key' - name part must consist of alphanumeric characters"}},
		{name: "invalid value", labels: map[string]string{"k": "-v-"},
			want: []string{"invalid node labels: '-v-' - a valid label must be an empty string or consist of alphanumeric characters"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateNodeLabels(c.labels)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}
