package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
	"github.com/actorlet/actorlet/test/faults/criproxy"
)

// The CRI calls the scenario hangs, one pod each.
const (
	hangCreate = "CreateContainer"
	hangStop   = "StopContainer"
	hangExec   = "ExecSync"
)

// TestHungCRI is scenario 3: one CRI call hung for one pod (CreateContainer,
// StopContainer, ExecSync) must cost that pod the call's timeout
// (runtimeRequestTimeout) and nothing else: the other pods start and stop
// meanwhile, the node stays Ready, PLEG keeps relisting, and the hung pod
// recovers once the call times out. The short variant hangs the three
// calls at once, on three pods; the full one hangs them in turn.
func TestHungCRI(t *testing.T) {
	s := Begin(t, "hung-cri", "One hung CRI call for one pod: the others go on, the node stays Ready, the pod recovers after runtimeRequestTimeout")
	// Upstream bounds CreateContainer by runtimeRequestTimeout, StopContainer
	// by it plus the grace period, a probe's ExecSync by it plus the
	// probe's timeoutSeconds; PLEG turns unhealthy after 3 min without a
	// relist, above the 2 min default, so that one slow relist alone does
	// not. A short timeout keeps the scenario short; it stays above what
	// any call takes here.
	timeout := Pick(15*time.Second, 30*time.Second)
	others := Pick(3, 10)
	rounds := Pick([][]string{{hangCreate, hangStop, hangExec}}, [][]string{{hangCreate}, {hangStop}, {hangExec}})
	recoverLimit := 3*timeout + 10*time.Second
	s.Note("runtimeRequestTimeout %s, %d other pods started and %d stopped per round, rounds %v", timeout, others, others, rounds)

	e := env.Require(t, env.WithAPIServer())
	proxy := criproxy.Start(t, e.RuntimeEndpoint)
	t.Cleanup(proxy.Clear) // held calls end with the node's stop
	n := NewNode(t, agent.WithConfig(fmt.Sprintf("runtimeRequestTimeout: %s\n", timeout)))
	n.RuntimeEndpoint = proxy.Endpoint
	n.Up(t, "hung-cri")

	for i, kinds := range rounds {
		hungCRIRound(t, s, n, proxy, fmt.Sprintf("r%d", i), kinds, others, timeout, recoverLimit)
	}
}

// hungCRIRound hangs the calls of kinds, each for one pod of its own, while
// others pods start and others stop, and records what the node did.
func hungCRIRound(t *testing.T, s *Scenario, n *agent.APIPods, proxy *criproxy.Proxy, round string, kinds []string,
	others int, timeout, recoverLimit time.Duration) {
	has := map[string]bool{}
	for _, k := range kinds {
		has[k] = true
	}
	label := strings.Join(kinds, "+")
	fig := func(what string) string {
		if len(kinds) == 1 {
			return kinds[0] + ": " + what
		}
		return what
	}
	victim := map[string]string{hangCreate: "create-" + round, hangStop: "stop-" + round, hangExec: "exec-" + round}
	olds, news := PodNames("old-"+round, others), PodNames("new-"+round, others)

	// Before the faults: the pods to stop, the pods whose stop and probe
	// will hang, running; how long that takes is the baseline.
	before := append([]string(nil), olds...)
	baseline := time.Now()
	if err := CreateSleepers(n, olds); err != nil {
		t.Fatal(err)
	}
	if has[hangStop] {
		before = append(before, victim[hangStop])
		if err := CreateSleepers(n, []string{victim[hangStop]}); err != nil {
			t.Fatal(err)
		}
	}
	if has[hangExec] {
		before = append(before, victim[hangExec])
		p := n.NewPod(victim[hangExec], nil, n.Sleeper("c"))
		// An exec readiness probe, the node agent's own ExecSync caller;
		// failureThreshold 3 lets one hung probe pass unnoticed, as it
		// would in production.
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
			PeriodSeconds:  2,
			TimeoutSeconds: 1,
		}
		n.Create(t, p)
	}
	if _, err := WaitFor(120*time.Second, func() error { _, err := NotRunning(n, before); return err }); err != nil {
		t.Fatalf("before the faults: %v", err)
	}
	s.Figure(fig("baseline: "+strconv.Itoa(len(before))+" pods created, running after (s)"), time.Since(baseline).Seconds(), "s")
	if has[hangExec] {
		if _, err := WaitFor(60*time.Second, func() error { return podReady(n, victim[hangExec]) }); err != nil {
			t.Fatalf("before the faults: %v", err)
		}
	}

	// The faults: each call hangs once, for its pod only; the ExecSync
	// rule's follower counts the probes that come after the hung one.
	rules := map[string]criproxy.RuleID{}
	for _, k := range kinds {
		rules[k] = proxy.Add(criproxy.Rule{Methods: []string{k}, Pod: criproxy.PodMatch{Namespace: n.NS, Name: victim[k]},
			Action: criproxy.Hang, Times: 1})
	}
	var execAfter criproxy.RuleID
	if has[hangExec] {
		execAfter = proxy.Add(criproxy.Rule{Methods: []string{hangExec}, Pod: criproxy.PodMatch{Namespace: n.NS, Name: victim[hangExec]},
			Action: criproxy.Delay})
	}
	defer proxy.Clear()
	nodes := WatchNode(n.Admin, n.Name, time.Second)
	health := watchHealth(fmt.Sprintf("127.0.0.1:%d", n.Healthz), fmt.Sprintf("%s:%d", n.NodeIP, n.ReadOnly), 500*time.Millisecond)
	rt := WatchRuntime(n.RT, OwnedBy(n.Owns), time.Second)

	start := time.Now()
	if has[hangCreate] {
		if err := CreateSleepers(n, []string{victim[hangCreate]}); err != nil {
			t.Fatal(err)
		}
	}
	if has[hangStop] {
		if err := DeletePods(n, []string{victim[hangStop]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := CreateSleepers(n, news); err != nil {
		t.Fatal(err)
	}
	if err := DeletePods(n, olds); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	wait := func(what string, within time.Duration, limit time.Duration, check func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := WaitFor(within, check)
			if err != nil {
				s.Note("%s: not within %s: %v", what, within, err)
			}
			// From the faults' start, before the creates and deletes.
			s.AtMost(what, time.Since(start).Seconds(), limit.Seconds(), "s")
		}()
	}
	// The other pods must not wait for the hung calls: they converge
	// before the calls' timeout.
	wait(fig(fmt.Sprintf("other pods: %d started, running after (s)", others)), recoverLimit, timeout, func() error {
		_, err := NotRunning(n, news)
		return err
	})
	wait(fig(fmt.Sprintf("other pods: %d deleted, gone after (s)", others)), recoverLimit, timeout, func() error {
		if left, err := StillPresent(n, olds); err != nil || len(left) > 0 {
			return fmt.Errorf("still present: %v (%v)", left, err)
		}
		return nil
	})
	if has[hangCreate] {
		wait("CreateContainer hung: pod running after (s)", recoverLimit+30*time.Second, recoverLimit, func() error {
			_, err := NotRunning(n, []string{victim[hangCreate]})
			return err
		})
	}
	if has[hangStop] {
		wait("StopContainer hung: pod gone after (s)", recoverLimit+30*time.Second, recoverLimit, func() error {
			if left, err := StillPresent(n, []string{victim[hangStop]}); err != nil || len(left) > 0 {
				return fmt.Errorf("still present (%v)", err)
			}
			return nil
		})
	}
	if has[hangExec] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// From the hung probe to the next one the runtime answers.
			var hung time.Time
			_, err := WaitFor(30*time.Second, func() error {
				at, ok := proxy.FirstHit(rules[hangExec])
				if !ok {
					return fmt.Errorf("no probe's ExecSync yet")
				}
				hung = at
				return nil
			})
			if err != nil {
				s.Note("ExecSync: %v", err)
				return
			}
			_, err = WaitFor(recoverLimit+30*time.Second, func() error {
				if proxy.Hits(execAfter) == 0 {
					return fmt.Errorf("no probe after the hung one")
				}
				return podReady(n, victim[hangExec])
			})
			if err != nil {
				s.Note("ExecSync hung: %v", err)
			}
			s.AtMost("ExecSync hung: from the hung probe to the next answered, pod Ready (s)", time.Since(hung).Seconds(), recoverLimit.Seconds(), "s")
		}()
	}
	wg.Wait()
	s.Figure(fig("round took (s)"), time.Since(start).Seconds(), "s")

	for _, k := range kinds {
		hits := proxy.Hits(rules[k])
		s.Check(k+" hung for one call of its pod", hits == 1, fmt.Sprintf("%d calls held", hits))
	}
	ns := nodes.Stop()
	s.Check(fig("node stayed Ready"), ns.ReadyChanges == 0 && ns.LongestNotReady == 0,
		fmt.Sprintf("%d Ready changes, not Ready for %s at most: %v", ns.ReadyChanges, ns.LongestNotReady.Round(time.Millisecond), ns.Changes))
	hs := health.stop()
	s.Figure(fig("healthz samples"), float64(hs.samples), "")
	s.AtMost(fig("healthz answers not ok"), float64(hs.failed), 0, "")
	if hs.firstFailure != "" {
		s.Note("%s: first healthz failure: %s", label, hs.firstFailure)
	}
	if hs.plegSamples > 0 {
		s.AtMost(fig("PLEG: longest since last relist (kubelet_pleg_last_seen_seconds) (s)"), hs.plegStalest.Seconds(), 10, "s")
	} else {
		s.Check(fig("PLEG: kubelet_pleg_last_seen_seconds read"), false, "no sample")
	}
	rs := rt.Stop()
	s.AtMost(fig("most ready sandboxes per pod"), float64(rs.MaxSandboxesPerPod), 1, "")
	s.AtMost(fig("most running instances per container"), float64(rs.MaxInstancesPerContainer), 1, "")
	for _, k := range kinds {
		s.Figure(k+" calls through the proxy", float64(proxy.Calls(k)), "")
	}

	// The round's pods go, so that the next round starts from an empty
	// namespace.
	var all []string
	for _, k := range kinds {
		all = append(all, victim[k])
	}
	all = append(all, news...)
	if err := DeletePods(n, all); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitFor(90*time.Second, func() error {
		if left, err := StillPresent(n, append(all, olds...)); err != nil || len(left) > 0 {
			return fmt.Errorf("still present: %v (%v)", left, err)
		}
		return nil
	}); err != nil {
		s.Check(fig("every pod deleted at the round's end"), false, err.Error())
	}
}

// podReady returns nil once the API shows the pod's Ready condition True.
func podReady(n *agent.APIPods, name string) error {
	p, err := n.Get(name)
	if err != nil {
		return err
	}
	if agent.PodReady(p) {
		return nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return fmt.Errorf("pod %s: Ready %s (%s)", name, c.Status, c.Message)
		}
	}
	return fmt.Errorf("pod %s: no Ready condition", name)
}

// healthWatch polls /healthz on the healthz port and on the read-only port
// (actorlet: its runtime, PLEG and sync-loop checks on both; upstream: a
// ping on the first, its sync-loop check on the second; upstream's PLEG
// health shows in the node's Ready condition instead) and the read-only
// port's kubelet_pleg_last_seen_seconds, which both agents set at each
// relist.
type healthWatch struct {
	p     *poller
	mu    sync.Mutex
	stats healthStats
}

type healthStats struct {
	samples, failed int
	firstFailure    string
	plegSamples     int
	// plegStalest is the longest time seen since PLEG's last relist.
	plegStalest time.Duration
}

func watchHealth(healthz, readOnly string, interval time.Duration) *healthWatch {
	w := &healthWatch{}
	client := &http.Client{Timeout: 5 * time.Second}
	w.p = poll(interval, func(ctx context.Context) {
		code, body, err := get(ctx, client, "http://"+healthz+"/healthz?verbose")
		if err == nil && code == http.StatusOK {
			code, body, err = get(ctx, client, "http://"+readOnly+"/healthz?verbose")
		}
		_, metrics, merr := get(ctx, client, "http://"+readOnly+"/metrics")
		now := time.Now()
		if ctx.Err() != nil {
			return // stopped during the sample: its failures are the stop's
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stats.samples++
		if err != nil || code != http.StatusOK {
			w.stats.failed++
			if w.stats.firstFailure == "" {
				w.stats.firstFailure = fmt.Sprintf("%s: %d %v %s", now.Format("15:04:05.000"), code, err, strings.TrimSpace(body))
			}
		}
		if merr == nil {
			if last, ok := plegLastSeen(metrics); ok {
				w.stats.plegSamples++
				w.stats.plegStalest = max(w.stats.plegStalest, now.Sub(last))
			}
		}
	})
	return w
}

func (w *healthWatch) stop() healthStats {
	w.p.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func get(ctx context.Context, c *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// plegLastSeen reads kubelet_pleg_last_seen_seconds (Unix seconds) from a
// Prometheus text exposition.
func plegLastSeen(metrics string) (time.Time, bool) {
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kubelet_pleg_last_seen_seconds") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil || v == 0 {
			return time.Time{}, false
		}
		return time.Unix(int64(v), 0), true
	}
	return time.Time{}, false
}
