// Command etcd is the etcd server of the version kubeadm v1.37.2 asks for
// (3.7.0), built from its server module: the root module, which holds
// etcd's own main, is not served at that version. hack/images/cluster puts
// it in the etcd image kubeadm's static pod runs.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
