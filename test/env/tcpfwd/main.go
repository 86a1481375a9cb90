// Command tcpfwd forwards TCP connections from one address to another:
// hack/cluster's nodes, each in a network namespace of its own, reach the
// environment's registry on the host's loopback through it.
//
// Usage: tcpfwd -listen 10.99.0.1:15000 -to 127.0.0.1:15000 [-listen A -to B ...]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var listen, to list
	flag.Var(&listen, "listen", "address to listen on (repeat, each with its -to)")
	flag.Var(&to, "to", "address to forward the connections of the matching -listen to")
	flag.Parse()
	if len(listen) == 0 || len(listen) != len(to) {
		fmt.Fprintln(os.Stderr, "tcpfwd: give as many -to as -listen, at least one")
		os.Exit(2)
	}
	errs := make(chan error, len(listen))
	for i := range listen {
		l, err := net.Listen("tcp", listen[i])
		if err != nil {
			log.Fatalf("tcpfwd: %v", err)
		}
		go func(l net.Listener, to string) { errs <- serve(l, to) }(l, to[i])
	}
	log.Fatalf("tcpfwd: %v", <-errs)
}

// serve forwards each connection l accepts to to, until l fails.
func serve(l net.Listener, to string) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", to)
			if err != nil {
				log.Printf("tcpfwd: %s: %v", to, err)
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(u, c)
			go pipe(c, u)
			<-done
			<-done
		}()
	}
}
