package services

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServerService is the Service of namespace default every container
// gets the variables of, links enabled or not (upstream's masterServices):
// KUBERNETES_SERVICE_HOST and _PORT are what in-cluster clients read.
const apiServerService = "kubernetes"

// EnvFor returns the service variables of a container of a pod in
// namespace, from every Service of the cluster (upstream's
// getServiceEnvVarMap): those of the `kubernetes` Service of namespace
// default always, and those of the Services of namespace when
// enableServiceLinks is set (the pod's spec.enableServiceLinks). A
// Service without a cluster IP (none, or "None") gives nothing. A Service
// named `kubernetes` in the pod's own namespace takes the place of
// default's when links are enabled, as upstream.
//
// Upstream hands the chosen Services to FromServices in a map's random
// order, so that when two Services give the same variable (Service
// "foo-port-80-tcp" and the port 80 of "foo" both give
// FOO_PORT_80_TCP_PORT) either may win; here they are ordered by name, so
// the same Services always give the same variables (the later name wins).
func EnvFor(all []*v1.Service, namespace string, enableServiceLinks bool) map[string]string {
	chosen := map[string]*v1.Service{}
	for _, s := range all {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == apiServerService:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == namespace && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	ordered := make([]*v1.Service, 0, len(chosen))
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		ordered = append(ordered, chosen[name])
	}
	env := map[string]string{}
	for _, e := range FromServices(ordered) {
		env[e.Name] = e.Value
	}
	return env
}

// FromServices returns the variables that tell a container where services
// are (upstream's envvars.FromServices), in order, for each Service with a
// cluster IP: NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port),
// NAME_SERVICE_PORT_PORTNAME for each named port, then Docker's link
// variables (NAME_PORT for the first port, and per port
// NAME_PORT_NUM_PROTO with its _PROTO, _PORT and _ADDR). NAME is the
// Service's name upper-cased with '-' turned into '_'.
//
// A Service with a cluster IP and no port gives nothing: the API server
// does not accept one, and upstream would index its first port out of
// range.
func FromServices(services []*v1.Service) []v1.EnvVar {
	var env []v1.EnvVar
	for _, s := range services {
		if !hasClusterIP(s) || len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := envName(s.Name)
		env = append(env,
			v1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: s.Spec.ClusterIP},
			v1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))})
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				env = append(env, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + envName(p.Name), Value: strconv.Itoa(int(p.Port))})
			}
		}
		env = append(env, linkVariables(prefix, s)...)
	}
	return env
}

// linkVariables are Docker's link variables of a Service's ports.
func linkVariables(prefix string, s *v1.Service) []v1.EnvVar {
	var env []v1.EnvVar
	for i, p := range s.Spec.Ports {
		protocol := string(v1.ProtocolTCP)
		if p.Protocol != "" {
			protocol = string(p.Protocol)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(protocol) + "://" + net.JoinHostPort(s.Spec.ClusterIP, port)
		if i == 0 {
			// Docker gives the first port a name of its own.
			env = append(env, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		portPrefix := prefix + "_PORT_" + port + "_" + strings.ToUpper(protocol)
		env = append(env,
			v1.EnvVar{Name: portPrefix, Value: url},
			v1.EnvVar{Name: portPrefix + "_PROTO", Value: strings.ToLower(protocol)},
			v1.EnvVar{Name: portPrefix + "_PORT", Value: port},
			v1.EnvVar{Name: portPrefix + "_ADDR", Value: s.Spec.ClusterIP})
	}
	return env
}

// envName is a Service's or a port's name as a variable's: upper case,
// '-' as '_' (the names are DNS labels, so nothing else needs changing).
func envName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// hasClusterIP reports whether a Service has a cluster IP: not headless
// ("None") and not without one (ExternalName), upstream's IsServiceIPSet.
func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != v1.ClusterIPNone && s.Spec.ClusterIP != ""
}
