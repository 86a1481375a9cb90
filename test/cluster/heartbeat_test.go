package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Flood bounds: floodRequests requests, paced evenly over floodDuration, at
// most floodConcurrency at a time, each given up after floodRequestTimeout.
const (
	floodRequests       = 2000
	floodDuration       = 20 * time.Second
	floodConcurrency    = 200
	floodRequestTimeout = time.Second
)

// TestHeartbeatsSurviveATokenFlood floods the kubelet API (on loopback) with
// requests carrying random bearer tokens, each a TokenReview the cache cannot
// answer, while watching the node's lease and Ready condition: every lease
// renewal lands within three renew intervals of the one before (the
// project's 3x rule) and the node stays Ready. The lease and the node status
// go through the heartbeat client, whose budget the TokenReviews cannot
// spend.
func TestHeartbeatsSurviveATokenFlood(t *testing.T) {
	// A short lease makes several renewals fall inside the flood.
	const leaseSeconds = 10
	renewInterval := leaseSeconds * time.Second / 4
	n := newClusterNode(t, withConfig(fmt.Sprintf("nodeLeaseDurationSeconds: %d\n", leaseSeconds)))
	if n.NodeIP != "127.0.0.1" {
		t.Fatalf("the flood is for loopback only; the node listens on %s", n.NodeIP)
	}
	n.Start()
	eventually(t, "node Ready", 30*time.Second, n.Ready)
	leaseRenewTime(t, n)

	// Watch the lease and the Ready condition from before the flood to after.
	ctx, stopWatching := context.WithCancel(context.Background())
	var watch sync.WaitGroup
	var renewals []time.Time // distinct renewTimes, in order
	var problems []string
	watch.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		lastReady := time.Time{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now := time.Now()
			if l, err := lease(n); err != nil {
				problems = append(problems, fmt.Sprintf("%s: read the lease: %v", now.Format(time.StampMilli), err))
			} else if l.Spec.RenewTime != nil {
				at := l.Spec.RenewTime.Time
				if len(renewals) == 0 || at.After(renewals[len(renewals)-1]) {
					renewals = append(renewals, at)
				}
				if age := now.Sub(at); age > 3*renewInterval {
					problems = append(problems, fmt.Sprintf("%s: lease last renewed %v ago (bound %v)", now.Format(time.StampMilli), age.Round(time.Millisecond), 3*renewInterval))
				}
			}
			if now.Sub(lastReady) >= time.Second {
				lastReady = now
				if err := n.Ready(); err != nil {
					problems = append(problems, fmt.Sprintf("%s: node not Ready: %v", now.Format(time.StampMilli), err))
				}
			}
		}
	})

	time.Sleep(renewInterval) // a renewal or so before the flood
	floodStart := time.Now()
	codes, failed := flood(t, fmt.Sprintf("https://%s/pods", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))))
	floodEnd := time.Now()
	time.Sleep(renewInterval) // and after it
	stopWatching()
	watch.Wait()

	t.Logf("flood of %d requests took %v: answers %v, %d without an answer", floodRequests, floodEnd.Sub(floodStart).Round(time.Millisecond), codes, failed)
	// The flood keeps its pace: at most floodConcurrency requests, each at
	// most floodRequestTimeout, are in flight, more than its rate needs.
	if took := floodEnd.Sub(floodStart); took > floodDuration+floodDuration/2 {
		t.Errorf("the flood took %v, not about %v: it did not keep its pace", took.Round(time.Millisecond), floodDuration)
	}
	if codes[http.StatusUnauthorized] == 0 {
		t.Errorf("no request of the flood was refused with 401: answers %v; the flood did not reach authentication", codes)
	}
	for code := range codes {
		if code != http.StatusUnauthorized {
			t.Errorf("answers %v: a random token must get 401", codes)
			break
		}
	}
	var during int
	for i, at := range renewals {
		if at.After(floodStart) && at.Before(floodEnd) {
			during++
		}
		if i > 0 {
			if gap := at.Sub(renewals[i-1]); gap > 3*renewInterval {
				t.Errorf("lease renewals %v apart (%s → %s), bound %v", gap.Round(time.Millisecond),
					renewals[i-1].Format(time.StampMilli), at.Format(time.StampMilli), 3*renewInterval)
			}
		}
	}
	t.Logf("%d lease renewals during the flood (every %v)", during, renewInterval)
	if want := int(floodEnd.Sub(floodStart)/(3*renewInterval)) - 1; during < max(want, 1) {
		t.Errorf("%d lease renewals during the %v flood, want at least %d", during, floodEnd.Sub(floodStart).Round(time.Second), max(want, 1))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// flood sends floodRequests GETs with random bearer tokens to url, paced
// over floodDuration with at most floodConcurrency in flight, and counts the
// answers by status code and the requests that got none.
func flood(t *testing.T, url string) (codes map[int]int, failed int) {
	t.Helper()
	client := &http.Client{Timeout: floodRequestTimeout, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // the node's self-signed serving certificate
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: floodConcurrency,
	}}
	defer client.CloseIdleConnections()
	codes = map[int]int{}
	var mu sync.Mutex
	slots := make(chan struct{}, floodConcurrency)
	var wg sync.WaitGroup
	pace := time.NewTicker(floodDuration / floodRequests)
	defer pace.Stop()
	for range floodRequests {
		<-pace.C
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			token := make([]byte, 24)
			_, _ = rand.Read(token)
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+hex.EncodeToString(token))
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			resp.Body.Close()
			codes[resp.StatusCode]++
		})
	}
	wg.Wait()
	return codes, failed
}
