// Command coredns is CoreDNS v1.14.6, the version kubeadm v1.37.2 deploys,
// with the plugins of kubeadm's Corefile and a few a user adds to it (log,
// debug, hosts, rewrite, bind): hack/images/cluster puts it in the coredns
// image. Importing only these keeps the cloud providers' plugins, and their
// dependencies, out of the build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
)

// The directive order is CoreDNS's own (dnsserver.Directives): a server's
// plugins run in that order whatever the Corefile's.
var _ = dnsserver.Directives

func main() {
	coremain.Run()
}
