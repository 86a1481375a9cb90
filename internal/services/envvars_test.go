package services

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(namespace, name, clusterIP string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func tcp(port int32) v1.ServicePort { return v1.ServicePort{Port: port, Protocol: v1.ProtocolTCP} }

func named(name string, port int32, protocol v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: port, Protocol: protocol}
}

// oneTCPPort is what a Service with the one unnamed TCP port gives,
// written out as upstream's tests list it.
func oneTCPPort(prefix, ip string, port int) map[string]string {
	p := strconv.Itoa(port)
	url := "tcp://" + ip + ":" + p
	return map[string]string{
		prefix + "_SERVICE_HOST":             ip,
		prefix + "_SERVICE_PORT":             p,
		prefix + "_PORT":                     url,
		prefix + "_PORT_" + p + "_TCP":       url,
		prefix + "_PORT_" + p + "_TCP_PROTO": "tcp",
		prefix + "_PORT_" + p + "_TCP_PORT":  p,
		prefix + "_PORT_" + p + "_TCP_ADDR":  ip,
	}
}

func union(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// TestFromServices is upstream's envvars_test.go, one Service per case,
// plus the cases it leaves out.
func TestFromServices(t *testing.T) {
	tests := []struct {
		name     string
		services []*v1.Service
		want     []v1.EnvVar
	}{
		{
			name:     "one TCP port, dashes in the name",
			services: []*v1.Service{svc("", "foo-bar", "1.2.3.4", tcp(8080))},
			want: []v1.EnvVar{
				{Name: "FOO_BAR_SERVICE_HOST", Value: "1.2.3.4"},
				{Name: "FOO_BAR_SERVICE_PORT", Value: "8080"},
				{Name: "FOO_BAR_PORT", Value: "tcp://1.2.3.4:8080"},
				{Name: "FOO_BAR_PORT_8080_TCP", Value: "tcp://1.2.3.4:8080"},
				{Name: "FOO_BAR_PORT_8080_TCP_PROTO", Value: "tcp"},
				{Name: "FOO_BAR_PORT_8080_TCP_PORT", Value: "8080"},
				{Name: "FOO_BAR_PORT_8080_TCP_ADDR", Value: "1.2.3.4"},
			},
		},
		{
			name:     "named ports, the first UDP",
			services: []*v1.Service{svc("", "abc-123", "5.6.7.8", named("u-d-p", 8081, v1.ProtocolUDP), named("t-c-p", 8081, v1.ProtocolTCP))},
			want: []v1.EnvVar{
				{Name: "ABC_123_SERVICE_HOST", Value: "5.6.7.8"},
				{Name: "ABC_123_SERVICE_PORT", Value: "8081"},
				{Name: "ABC_123_SERVICE_PORT_U_D_P", Value: "8081"},
				{Name: "ABC_123_SERVICE_PORT_T_C_P", Value: "8081"},
				{Name: "ABC_123_PORT", Value: "udp://5.6.7.8:8081"},
				{Name: "ABC_123_PORT_8081_UDP", Value: "udp://5.6.7.8:8081"},
				{Name: "ABC_123_PORT_8081_UDP_PROTO", Value: "udp"},
				{Name: "ABC_123_PORT_8081_UDP_PORT", Value: "8081"},
				{Name: "ABC_123_PORT_8081_UDP_ADDR", Value: "5.6.7.8"},
				{Name: "ABC_123_PORT_8081_TCP", Value: "tcp://5.6.7.8:8081"},
				{Name: "ABC_123_PORT_8081_TCP_PROTO", Value: "tcp"},
				{Name: "ABC_123_PORT_8081_TCP_PORT", Value: "8081"},
				{Name: "ABC_123_PORT_8081_TCP_ADDR", Value: "5.6.7.8"},
			},
		},
		{
			name:     "unnamed first port, a port named by digits",
			services: []*v1.Service{svc("", "q-u-u-x", "9.8.7.6", tcp(8082), named("8083", 8083, v1.ProtocolTCP))},
			want: []v1.EnvVar{
				{Name: "Q_U_U_X_SERVICE_HOST", Value: "9.8.7.6"},
				{Name: "Q_U_U_X_SERVICE_PORT", Value: "8082"},
				{Name: "Q_U_U_X_SERVICE_PORT_8083", Value: "8083"},
				{Name: "Q_U_U_X_PORT", Value: "tcp://9.8.7.6:8082"},
				{Name: "Q_U_U_X_PORT_8082_TCP", Value: "tcp://9.8.7.6:8082"},
				{Name: "Q_U_U_X_PORT_8082_TCP_PROTO", Value: "tcp"},
				{Name: "Q_U_U_X_PORT_8082_TCP_PORT", Value: "8082"},
				{Name: "Q_U_U_X_PORT_8082_TCP_ADDR", Value: "9.8.7.6"},
				{Name: "Q_U_U_X_PORT_8083_TCP", Value: "tcp://9.8.7.6:8083"},
				{Name: "Q_U_U_X_PORT_8083_TCP_PROTO", Value: "tcp"},
				{Name: "Q_U_U_X_PORT_8083_TCP_PORT", Value: "8083"},
				{Name: "Q_U_U_X_PORT_8083_TCP_ADDR", Value: "9.8.7.6"},
			},
		},
		{
			name:     "headless",
			services: []*v1.Service{svc("", "svrc-clusterip-none", "None", tcp(8082))},
		},
		{
			name:     "no cluster IP",
			services: []*v1.Service{svc("", "svrc-clusterip-empty", "", tcp(8082))},
		},
		{
			name:     "IPv6 in brackets in the URLs only",
			services: []*v1.Service{svc("", "super-ipv6", "2001:DB8::", named("u-d-p", 8084, v1.ProtocolUDP))},
			want: []v1.EnvVar{
				{Name: "SUPER_IPV6_SERVICE_HOST", Value: "2001:DB8::"},
				{Name: "SUPER_IPV6_SERVICE_PORT", Value: "8084"},
				{Name: "SUPER_IPV6_SERVICE_PORT_U_D_P", Value: "8084"},
				{Name: "SUPER_IPV6_PORT", Value: "udp://[2001:DB8::]:8084"},
				{Name: "SUPER_IPV6_PORT_8084_UDP", Value: "udp://[2001:DB8::]:8084"},
				{Name: "SUPER_IPV6_PORT_8084_UDP_PROTO", Value: "udp"},
				{Name: "SUPER_IPV6_PORT_8084_UDP_PORT", Value: "8084"},
				{Name: "SUPER_IPV6_PORT_8084_UDP_ADDR", Value: "2001:DB8::"},
			},
		},
		{
			name:     "SCTP",
			services: []*v1.Service{svc("", "sctp-1", "1.2.3.4", v1.ServicePort{Port: 777, Protocol: v1.ProtocolSCTP})},
			want: []v1.EnvVar{
				{Name: "SCTP_1_SERVICE_HOST", Value: "1.2.3.4"},
				{Name: "SCTP_1_SERVICE_PORT", Value: "777"},
				{Name: "SCTP_1_PORT", Value: "sctp://1.2.3.4:777"},
				{Name: "SCTP_1_PORT_777_SCTP", Value: "sctp://1.2.3.4:777"},
				{Name: "SCTP_1_PORT_777_SCTP_PROTO", Value: "sctp"},
				{Name: "SCTP_1_PORT_777_SCTP_PORT", Value: "777"},
				{Name: "SCTP_1_PORT_777_SCTP_ADDR", Value: "1.2.3.4"},
			},
		},
		{
			name:     "no protocol is TCP",
			services: []*v1.Service{svc("", "bare", "10.0.0.1", v1.ServicePort{Port: 53})},
			want: []v1.EnvVar{
				{Name: "BARE_SERVICE_HOST", Value: "10.0.0.1"},
				{Name: "BARE_SERVICE_PORT", Value: "53"},
				{Name: "BARE_PORT", Value: "tcp://10.0.0.1:53"},
				{Name: "BARE_PORT_53_TCP", Value: "tcp://10.0.0.1:53"},
				{Name: "BARE_PORT_53_TCP_PROTO", Value: "tcp"},
				{Name: "BARE_PORT_53_TCP_PORT", Value: "53"},
				{Name: "BARE_PORT_53_TCP_ADDR", Value: "10.0.0.1"},
			},
		},
		{
			name:     "a cluster IP and no port gives nothing rather than a crash",
			services: []*v1.Service{svc("", "portless", "10.0.0.2")},
		},
		{
			name:     "nothing",
			services: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromServices(tt.services)
			if !slices.Equal(got, tt.want) {
				t.Errorf("FromServices:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestFromServicesKeepsOrder checks that Services follow each other in
// the order given, as upstream's test of all of them at once.
func TestFromServicesKeepsOrder(t *testing.T) {
	got := FromServices([]*v1.Service{
		svc("", "b", "10.0.0.2", tcp(2)),
		svc("", "none", "None", tcp(3)),
		svc("", "a", "10.0.0.1", tcp(1)),
	})
	var names []string
	for _, e := range got {
		if e.Value == "10.0.0.1" || e.Value == "10.0.0.2" {
			names = append(names, e.Name)
		}
	}
	want := []string{"B_SERVICE_HOST", "B_PORT_2_TCP_ADDR", "A_SERVICE_HOST", "A_PORT_1_TCP_ADDR"}
	if !slices.Equal(names, want) {
		t.Errorf("order: got %v, want %v", names, want)
	}
}

// TestEnvFor is the service part of upstream's TestMakeEnvironmentVariables
// (its Services, namespaces and links), plus the precedence it leaves to
// a map's order.
func TestEnvFor(t *testing.T) {
	// upstream's Services, duplicates included: a list is what is given.
	upstream := []*v1.Service{
		svc(metav1.NamespaceDefault, "kubernetes", "1.2.3.1", tcp(8081)),
		svc("test1", "test", "1.2.3.3", tcp(8083)),
		svc("test2", "kubernetes", "1.2.3.4", tcp(8084)),
		svc("test2", "test", "1.2.3.5", tcp(8085)),
		svc("test2", "test", "None", tcp(8085)),
		svc("test2", "test", "", tcp(8085)),
		svc(metav1.NamespaceDefault, "not-special", "1.2.3.8", tcp(8088)),
		svc(metav1.NamespaceDefault, "not-special", "None", tcp(8088)),
		svc(metav1.NamespaceDefault, "not-special", "", tcp(8088)),
	}
	apiServer := oneTCPPort("KUBERNETES", "1.2.3.1", 8081)
	tests := []struct {
		name      string
		services  []*v1.Service
		namespace string
		links     bool
		want      map[string]string
	}{
		{
			name: "no Services", services: nil, namespace: "test1", links: true,
			want: map[string]string{},
		},
		{
			name: "links off: the API server's only", services: upstream, namespace: "test1",
			want: apiServer,
		},
		{
			name: "links on: the namespace's and the API server's", services: upstream, namespace: "test1", links: true,
			want: union(apiServer, oneTCPPort("TEST", "1.2.3.3", 8083)),
		},
		{
			name: "a kubernetes Service in the pod's namespace, links off: default's", services: upstream, namespace: "test2",
			want: apiServer,
		},
		{
			name: "a kubernetes Service in the pod's namespace, links on: the namespace's", services: upstream, namespace: "test2", links: true,
			want: union(oneTCPPort("KUBERNETES", "1.2.3.4", 8084), oneTCPPort("TEST", "1.2.3.5", 8085)),
		},
		{
			name: "a kubernetes Service in the pod's namespace listed before default's, links on: the namespace's",
			services: []*v1.Service{
				svc("test2", "kubernetes", "1.2.3.4", tcp(8084)),
				svc(metav1.NamespaceDefault, "kubernetes", "1.2.3.1", tcp(8081)),
			},
			namespace: "test2", links: true,
			want: oneTCPPort("KUBERNETES", "1.2.3.4", 8084),
		},
		{
			name: "pod in default, links off", services: upstream, namespace: metav1.NamespaceDefault,
			want: apiServer,
		},
		{
			name: "pod in default, links on", services: upstream, namespace: metav1.NamespaceDefault, links: true,
			want: union(apiServer, oneTCPPort("NOT_SPECIAL", "1.2.3.8", 8088)),
		},
		{
			name: "a namespace without Services, links on", services: upstream, namespace: "empty", links: true,
			want: apiServer,
		},
		{
			name: "a headless kubernetes Service in default gives nothing",
			services: []*v1.Service{
				svc(metav1.NamespaceDefault, "kubernetes", "None", tcp(443)),
				svc("test1", "kubernetes", "10.96.0.9", tcp(443)),
			},
			namespace: "test1", links: false,
			want: map[string]string{},
		},
		{
			name:      "a Service of another namespace is never seen",
			services:  []*v1.Service{svc("other", "db", "10.96.0.5", tcp(5432))},
			namespace: "test1", links: true,
			want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EnvFor(tt.services, tt.namespace, tt.links)
			if !maps.Equal(got, tt.want) {
				t.Errorf("EnvFor(%q, links=%v):\n got %v\nwant %v", tt.namespace, tt.links, got, tt.want)
			}
		})
	}
}

// TestEnvForCollisionIsStable checks that when two Services give the same
// variable, the same one wins whatever the order of the list: upstream's
// winner depends on a map's order.
func TestEnvForCollisionIsStable(t *testing.T) {
	foo := svc("ns", "foo", "10.0.0.1", tcp(80))
	clash := svc("ns", "foo-port-80-tcp", "10.0.0.2", tcp(81))
	a := EnvFor([]*v1.Service{foo, clash}, "ns", true)
	b := EnvFor([]*v1.Service{clash, foo}, "ns", true)
	if !maps.Equal(a, b) {
		t.Fatalf("the order of the list changed the variables:\n%v\n%v", a, b)
	}
	// The later name wins: FOO_PORT_80_TCP_PORT is foo-port-80-tcp's
	// link variable, not foo's port.
	if got, want := a["FOO_PORT_80_TCP_PORT"], "tcp://10.0.0.2:81"; got != want {
		t.Errorf("FOO_PORT_80_TCP_PORT = %q, want %q", got, want)
	}
}
