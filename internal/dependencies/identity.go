package dependencies

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeName is the node's name as Build settles it, for the steps before
// it (the TLS bootstrap names its certificate after the node).
func NodeName(hostnameOverride string) (string, error) { return nodeName(hostnameOverride) }

// nodeName is the hostname override or the machine's hostname, lower-cased
// and trimmed as upstream's GetHostname does; it must be a valid DNS-1123
// subdomain, since it names the Node object.
func nodeName(override string) (string, error) {
	name := override
	source := "--hostname-override"
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: read the hostname: %w", err)
		}
		name, source = h, "the hostname"
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", fmt.Errorf("node name: %s is empty", source)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("node name %q from %s: %s", name, source, strings.Join(errs, "; "))
	}
	return name, nil
}

// nodeIP is --node-ip when given, else the address of the interface that
// carries the default route. Only local tables are read: finding the node's
// address sends nothing over the network.
func nodeIP(flag string) (net.IP, error) {
	if flag != "" {
		ip := net.ParseIP(flag)
		if ip == nil {
			return nil, fmt.Errorf("--node-ip %q is not an IP address", flag)
		}
		return ip, nil
	}
	iface, err := defaultRouteInterface("/proc/net/route")
	if err == nil {
		if ip := interfaceIP(iface); ip != nil {
			return ip, nil
		}
	}
	// No default route (an isolated test machine): any global unicast
	// address, else loopback, as upstream falls back to.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
			return n.IP, nil
		}
	}
	return net.IPv4(127, 0, 0, 1), nil
}

func defaultRouteInterface(routes string) (string, error) {
	f, err := os.Open(routes)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 2 && fields[1] == "00000000" && fields[0] != "Iface" {
			return fields[0], nil
		}
	}
	return "", errors.New("no default route")
}

func interfaceIP(name string) net.IP {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP
		}
	}
	return nil
}
