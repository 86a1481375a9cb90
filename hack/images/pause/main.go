// Command pause is the infrastructure ("sandbox") container of the test
// environment's pause image (registry.k8s.io/pause:3.10). It sleeps until it
// receives SIGTERM or SIGINT, then exits 0, and reaps every child it inherits
// (it is PID 1 of the pod's shared PID namespace). Build it static:
//
//	CGO_ENABLED=0 go build -o pause ./hack/images/pause
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
