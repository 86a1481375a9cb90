// Command hostpathproxy is the /hostpathplugin of the image the e2e DRA
// specs deploy (registry.k8s.io/sig-storage/hostpathplugin, issue #37),
// in csi-driver-host-path's proxy mode only, which is all they run of it:
// e2e.test execs it in the driver's pod as
//
//	/hostpathplugin --v=5 --endpoint=/var/lib/kubelet/plugins/NAME/dra.sock --proxy-endpoint=tcp://:9001
//
// and reaches the TCP port through the API server's port-forward, so that
// the test driver, running in e2e.test, serves the sockets the kubelet
// dials in the pod's host directories. Each connection accepted on the
// endpoint is paired with the next one accepted on the proxy endpoint and
// the bytes are copied both ways until either side closes, as
// csi-driver-host-path's pkg/proxy does. csi-driver-host-path is not served
// as a Go module here; this is that part of it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///csi/csi.sock", "the socket the kubelet connects to: a path or unix://PATH")
	proxyEndpoint := flag.String("proxy-endpoint", "", "where the other side connects: tcp://[HOST]:PORT")
	flag.Int("v", 0, "log verbosity (accepted for csi-driver-host-path's command line; every connection is logged)")
	flag.Parse()
	log.SetPrefix("hostpathproxy: ")
	if *proxyEndpoint == "" {
		log.Fatal("only the proxy mode is implemented: --proxy-endpoint is required")
	}
	l1, err := listen(*endpoint)
	if err != nil {
		log.Fatal(err)
	}
	l2, err := listen(*proxyEndpoint)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("proxying %s <-> %s", *endpoint, *proxyEndpoint)
	go serve(l1, l2)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	// Closing a Unix listener unlinks its socket.
	l1.Close()
	l2.Close()
}

// listen opens a listener for a csi-driver-host-path endpoint: unix://PATH,
// tcp://ADDR, or a bare path of a Unix socket, replacing a stale socket.
func listen(ep string) (net.Listener, error) {
	proto, addr := "unix", ep
	if p, a, ok := strings.Cut(ep, "://"); ok {
		proto, addr = strings.ToLower(p), a
	}
	if proto != "unix" && proto != "tcp" || addr == "" {
		return nil, fmt.Errorf("invalid endpoint: %v", ep)
	}
	if proto == "unix" {
		if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	return net.Listen(proto, addr)
}

// serve pairs a connection of l1 with the next one of l2, in turn.
func serve(l1, l2 net.Listener) {
	for n := 1; ; n++ {
		c1, err := l1.Accept()
		if err != nil {
			log.Printf("accept on %s: %v", l1.Addr(), err)
			return
		}
		c2, err := l2.Accept()
		if err != nil {
			c1.Close()
			log.Printf("accept on %s: %v", l2.Addr(), err)
			return
		}
		log.Printf("connection #%d: %s paired with %s", n, l1.Addr(), c2.RemoteAddr())
		go pipe(n, c1, c2)
	}
}

// pipe copies both ways until one side ends, then closes both.
func pipe(n int, c1, c2 net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(c1, c2)
	go cp(c2, c1)
	<-done
	c1.Close()
	c2.Close()
	<-done
	log.Printf("connection #%d closed", n)
}
