package podruntime

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSandboxSysctls checks defaultPodSysctls as upstream's
// applyPodSysctls: each only in a pod that has its namespace, normalised,
// under the pod's own sysctls.
func TestSandboxSysctls(t *testing.T) {
	defaults := map[string]string{
		"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shmmax": "100", "fs.mqueue.msg_max": "20",
		"user.max_user_namespaces": "5", "kernel.domainname": "example", "net/ipv4/ping_group_range": "0 1",
		"vm.swappiness": "1",
	}
	f := false
	for _, tc := range []struct {
		name     string
		defaults map[string]string
		spec     v1.PodSpec
		want     map[string]string
	}{
		{name: "none", want: nil},
		{name: "pod's only", spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shmmax", Value: "1"}}}},
			want: map[string]string{"kernel.shmmax": "1"}},
		{name: "pod namespaces", defaults: defaults, want: map[string]string{
			"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shmmax": "100", "fs.mqueue.msg_max": "20",
			"kernel.domainname": "example", "net.ipv4.ping_group_range": "0 1"}},
		{name: "own user namespace", defaults: defaults, spec: v1.PodSpec{HostUsers: &f, HostNetwork: true, HostIPC: true},
			want: map[string]string{"user.max_user_namespaces": "5"}},
		{name: "host namespaces", defaults: defaults, spec: v1.PodSpec{HostNetwork: true, HostIPC: true}, want: nil},
		{name: "pod's win", defaults: defaults, spec: v1.PodSpec{HostNetwork: true,
			SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shmmax", Value: "1"}}}},
			want: map[string]string{"kernel.shmmax": "1", "fs.mqueue.msg_max": "20"}},
	} {
		got := sandboxSysctls(tc.defaults, &v1.Pod{Spec: tc.spec})
		if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
