package standalone

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFloodDoesNotReachThePodManager sends /pods and /healthz from 200
// clients at once for 20 seconds, to the read-only port and the healthz
// listener: they answer from a snapshot, so the pod-manager's mailbox
// stays short, and a pod created meanwhile starts about as fast as one
// created before the flood.
func TestFloodDoesNotReachThePodManager(t *testing.T) {
	const clients, duration, maxDepth = 200, 20 * time.Second, 10
	n := newNode(t)
	n.Start()
	spec := fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())
	start := func(name string) time.Duration {
		written := time.Now()
		n.WriteManifest(name+".yaml", manifest(name, spec))
		n.Running(name, 60*time.Second)
		return time.Since(written)
	}
	usual := start("before")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	urls := []string{fmt.Sprintf("http://127.0.0.1:%d/pods", n.ReadOnly), fmt.Sprintf("http://127.0.0.1:%d/healthz", n.Healthz)}
	for i := range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := client.Get(urls[i%2])
				if err != nil {
					failures.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failures.Add(1)
				}
				requests.Add(1)
			}
		})
	}
	// The pod-manager's mailbox depth, as the registry counts it, read
	// from the debug listener every 100 ms.
	var deepest atomic.Int64
	samples := 0
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if d, err := n.mailboxDepth("bootstrap/pod-manager"); err == nil {
				samples++
				if d > deepest.Load() {
					deepest.Store(d)
				}
			}
		}
	})
	began := time.Now()
	time.Sleep(2 * time.Second) // the flood is on
	during := start("during")
	time.Sleep(time.Until(began.Add(duration)))
	close(stop)
	wg.Wait()
	transport.CloseIdleConnections()

	t.Logf("%d requests in %v (%d failed); pod-manager mailbox at most %d over %d samples; pod start %v before, %v during",
		requests.Load(), duration, failures.Load(), deepest.Load(), samples, usual.Round(time.Millisecond), during.Round(time.Millisecond))
	if samples < 50 {
		t.Errorf("only %d samples of the mailbox", samples)
	}
	if deepest.Load() >= maxDepth {
		t.Errorf("the pod-manager's mailbox reached %d, want under %d", deepest.Load(), maxDepth)
	}
	if limit := 2*usual + 3*time.Second; during > limit {
		t.Errorf("the pod created during the flood started in %v, want within %v (it took %v before)", during, limit, usual)
	}
	if requests.Load() < int64(duration/time.Second)*100 {
		t.Errorf("only %d requests: the test did not flood", requests.Load())
	}
}

// mailboxDepth reads the mailbox depth of the actor at path from the
// registry, through the debug listener.
func (n *node) mailboxDepth(path string) (int64, error) {
	actors, err := n.actors()
	if err != nil {
		return 0, err
	}
	for _, a := range actors {
		if a.Path == path {
			return a.MailboxDepth, nil
		}
	}
	return 0, fmt.Errorf("no actor %s", path)
}
