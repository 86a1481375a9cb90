package chaos

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
)

var churnLoopsFlag = flag.Int("chaos.churn-loops", 0,
	"churn-leak: loops instead of the mode's (short 6, full 200), e.g. 40 for a full-sized run that fits in a quarter of an hour")

var heapProfilesFlag = flag.String("chaos.heap-profiles", "",
	"churn-leak: write actorlet's heap profile (after a GC) to this directory after the warm-up and after every later loop, "+
		"for go tool pprof -base (off by default)")

// TestChurnLeak creates and deletes pods through the API in loops, and
// after each loop, once its pods are gone, samples the agent: RssAnon,
// goroutines, open descriptors and (actorlet) actors by kind. After a
// warm-up these must stay flat; actors must be back to the idle count
// after every loop; nothing of the pods may be left in the runtime or on
// disk at the end.
func TestChurnLeak(t *testing.T) {
	s := Begin(t, "churn-leak", "create/delete loops of pods: RssAnon, goroutines and actors flat after warm-up, nothing left")
	loops, perLoop, warmup := Pick(6, 200), Pick(6, 20), Pick(3, 20)
	if *churnLoopsFlag > 0 {
		loops = *churnLoopsFlag
	}
	if loops < warmup+Pick(3, 5) {
		warmup = max(Pick(3, 5), loops-Pick(3, 5))
	}
	// The growth allowed after the warm-up, as a fraction of the reference
	// and a floor: the in the full suite; the short one has too few
	// loops for a steady state, and allows three times as much (the strict
	// targets there are the actors and what is left).
	slack := Pick(3.0, 1.0)
	s.Figure("loops", float64(loops), "")
	s.Figure("pods per loop", float64(perLoop), "")
	s.Figure("warm-up loops", float64(warmup), "")

	var opts []agent.NodeOption
	debugAddr := ""
	if !Agent.Upstream {
		// The debug listener's pprof, for the goroutine dumps that show
		// what grew; the upstream kubelet has no such flag.
		debugAddr = fmt.Sprintf("127.0.0.1:%d", agent.FreePort(t))
		opts = append(opts, agent.WithArgs("--debug-address", debugAddr))
	}
	n := NewNode(t, opts...)
	n.Up(t, "churn-leak")
	// The loops' pods go through a client of their own, not rate-limited;
	// n keeps the node and its cleanup.
	pods, err := Unthrottled(n)
	if err != nil {
		t.Fatal(err)
	}
	owns := OwnedBy(n.Owns)
	metricsURL := fmt.Sprintf("http://%s:%d/metrics", n.NodeIP, n.ReadOnly)

	// The idle agent: its actors are what each loop must come back to.
	time.Sleep(2 * time.Second)
	idle, err := SampleAgent(n.Proc.Pid(), metricsURL)
	if err != nil {
		t.Fatalf("sample the idle agent: %v", err)
	}
	s.Figure("idle RssAnon", float64(idle.RssAnonKiB)/1024, "MiB")
	if idle.Goroutines < 0 {
		s.Note("%s serves no go_goroutines on %s: goroutines not measured", Agent.Name, metricsURL)
	} else {
		s.Figure("idle goroutines", idle.Goroutines, "")
	}
	if idle.Actors >= 0 {
		s.Figure("idle actors", idle.Actors, "")
	}
	t.Logf("idle: RssAnon %d KiB, fds %d, goroutines %g, actors %g %v",
		idle.RssAnonKiB, idle.FDs, idle.Goroutines, idle.Actors, idle.ActorsByKind)

	within := 60*time.Second + time.Duration(perLoop)*3*time.Second
	var (
		samples       []AgentSample
		readyTimes    []float64
		loopTimes     []float64
		goneTimes     []float64
		mostLeft      int
		mostOnDisk    int
		actorMisses   []string
		failed        string
		warmDump      map[string]int
		actorsSettled []float64
	)
	for loop := 1; loop <= loops && failed == ""; loop++ {
		loopStart := time.Now()
		// New names in every loop: state kept by name shows as growth.
		names := PodNames(fmt.Sprintf("l%d", loop), perLoop)
		if err := CreateSleepers(pods, names); err != nil {
			failed = fmt.Sprintf("loop %d: %v", loop, err)
			break
		}
		took, err := WaitFor(within, func() error { _, err := NotRunning(pods, names); return err })
		if err != nil {
			failed = fmt.Sprintf("loop %d: pods not Running within %v: %v", loop, within, err)
			break
		}
		readyTimes = append(readyTimes, took.Seconds())
		if err := DeletePods(pods, names); err != nil {
			failed = fmt.Sprintf("loop %d: %v", loop, err)
			break
		}
		took, err = WaitFor(within, func() error {
			left, err := StillPresent(pods, names)
			if err == nil && len(left) > 0 {
				err = fmt.Errorf("%d pods still in the API: %s", len(left), strings.Join(left[:min(3, len(left))], ", "))
			}
			return err
		})
		if err != nil {
			failed = fmt.Sprintf("loop %d: pods not gone within %v: %v", loop, within, err)
			break
		}
		goneTimes = append(goneTimes, took.Seconds())

		// The pods' actors stop once their pods are gone; a few seconds
		// later at most, as the pod workers' last steps end.
		var sample AgentSample
		settle, err := WaitFor(30*time.Second, func() error {
			var err error
			if sample, err = SampleAgent(n.Proc.Pid(), metricsURL); err != nil {
				return err
			}
			if above := ActorsAbove(sample.ActorsByKind, idle.ActorsByKind); above != "" {
				return fmt.Errorf("actors above the idle count: %s", above)
			}
			return nil
		})
		if err != nil {
			actorMisses = append(actorMisses, fmt.Sprintf("loop %d: %v", loop, err))
		} else if idle.Actors >= 0 {
			actorsSettled = append(actorsSettled, settle.Seconds())
		}
		// A second for what follows the last removals (status writes,
		// idle connections) before the sample that counts.
		time.Sleep(time.Second)
		if sample, err = SampleAgent(n.Proc.Pid(), metricsURL); err != nil {
			failed = fmt.Sprintf("loop %d: sample: %v", loop, err)
			break
		}
		samples = append(samples, sample)
		loopTimes = append(loopTimes, time.Since(loopStart).Seconds())
		sbs, cs, err := Leftovers(t, n.RT, owns)
		if err != nil {
			failed = fmt.Sprintf("loop %d: list the runtime: %v", loop, err)
			break
		}
		mostLeft = max(mostLeft, sbs+cs)
		onDisk := leftKinds(PodLeftovers(n.RootDir, n.NS, agent.MountsUnder(t, n.RootDir)))
		mostOnDisk = max(mostOnDisk, onDisk.total)
		t.Logf("loop %d: Running %.1fs, gone %.1fs; RssAnon %d KiB, fds %d, goroutines %g, actors %g; left in the runtime %d sandboxes, %d containers; on disk %s",
			loop, readyTimes[len(readyTimes)-1], goneTimes[len(goneTimes)-1], sample.RssAnonKiB, sample.FDs, sample.Goroutines, sample.Actors, sbs, cs, onDisk)
		if loop == warmup && debugAddr != "" {
			if warmDump, err = GoroutineDump(debugAddr); err != nil {
				t.Logf("goroutine dump after the warm-up: %v", err)
			}
		}
		if loop >= warmup && debugAddr != "" && *heapProfilesFlag != "" {
			file := filepath.Join(*heapProfilesFlag, fmt.Sprintf("churn-leak-heap-loop%03d.pb.gz", loop))
			if err := HeapProfile(debugAddr, file); err != nil {
				t.Logf("heap profile after loop %d: %v", loop, err)
			}
		}
	}
	s.Check("every loop's pods Running, then gone from the API", failed == "", orNone(failed))
	s.Figure("loops done", float64(len(samples)), "")
	if len(readyTimes) > 0 {
		s.Figure("median time to all Running", Median(readyTimes), "s")
		s.Figure("median time to all gone from the API", Median(goneTimes), "s")
		s.Figure("median time of a loop, samples included", Median(loopTimes), "s")
	}
	s.Figure("most sandboxes+containers left right after a loop", float64(mostLeft), "")
	s.Figure("most pod directories, log directories and mounts left right after a loop", float64(mostOnDisk), "")

	if idle.Actors >= 0 {
		s.AtMost("loops whose actors did not come back to the idle count within 30 s", float64(len(actorMisses)), 0, "")
		for i, m := range actorMisses {
			if i == 5 {
				s.Note("and %d more loops with actors above the idle count", len(actorMisses)-5)
				break
			}
			s.Note("%s", m)
		}
		if len(actorsSettled) > 0 {
			s.Figure("median time for the actors to come back after the pods left the API", Median(actorsSettled), "s")
		}
	} else {
		s.Note("%s has no actors: actors not measured", Agent.Name)
	}

	// Flat after the warm-up: the median of the last samples against that
	// of the warm-up's last, three in the short variant, five in the full
	// one (RssAnon moves by a few MiB from one loop to the next as the
	// heap is collected).
	win := Pick(3, 5)
	if len(samples) >= warmup+win {
		window := func(from, to int, f func(AgentSample) float64) float64 {
			var xs []float64
			for _, x := range samples[max(0, from):to] {
				xs = append(xs, f(x))
			}
			return Median(xs)
		}
		growth := func(name, unit string, f func(AgentSample) float64, frac, floor float64) float64 {
			ref := window(warmup-win, warmup, f)
			last := window(len(samples)-win, len(samples), f)
			s.Figure(fmt.Sprintf("%s after the warm-up (median of %d)", name, win), ref, unit)
			s.Figure(fmt.Sprintf("%s at the end (median of %d)", name, win), last, unit)
			var after []float64
			for _, x := range samples[warmup-1:] {
				after = append(after, f(x))
			}
			s.Figure(name+" trend after the warm-up (least squares)", Slope(after), strings.TrimSpace(unit+" a loop"))
			if frac > 0 {
				s.AtMost(name+" growth after the warm-up", last-ref, slack*Growth(ref, frac, floor), unit)
			}
			return last - ref
		}
		growth("RssAnon", "MiB", func(x AgentSample) float64 { return float64(x.RssAnonKiB) / 1024 }, 0.10, 4)
		if idle.HeapInuse >= 0 {
			// A figure only: what of RssAnon's growth is live heap.
			growth("heap in use", "MiB", func(x AgentSample) float64 { return x.HeapInuse / (1 << 20) }, 0, 0)
		}
		growth("open fds", "", func(x AgentSample) float64 { return float64(x.FDs) }, 0.10, 10)
		if idle.Goroutines >= 0 {
			if g := growth("goroutines", "", func(x AgentSample) float64 { return x.Goroutines }, 0.05, 10); g > 0 && warmDump != nil {
				end, err := GoroutineDump(debugAddr)
				if err != nil {
					t.Logf("goroutine dump at the end: %v", err)
				}
				for _, line := range DumpGrowth(warmDump, end, 10) {
					t.Logf("goroutines grown since the warm-up: %s", line)
				}
			}
		}
	} else {
		s.Note("%d loops done, %d needed to measure growth after a warm-up of %d", len(samples), warmup+win, warmup)
	}

	// Nothing left at the end: in the runtime, in the root directory, in
	// /var/log/pods. The disk's clean-up follows the API's deletion by up
	// to a period: actorlet's pod directories go at the volume-manager's
	// search for orphans (syncFrequency, 1 min), the log directories of
	// both agents at container GC (1 min).
	var leftNow, leftFirst []string
	took, err := WaitFor(3*time.Minute, func() error {
		sbs, cs, err := Leftovers(t, n.RT, owns)
		if err != nil {
			return err
		}
		leftNow = PodLeftovers(n.RootDir, n.NS, agent.MountsUnder(t, n.RootDir))
		if sbs+cs > 0 {
			leftNow = append(leftNow, fmt.Sprintf("%d sandboxes and %d containers in the runtime", sbs, cs))
		}
		if len(leftNow) > 0 {
			if leftFirst == nil {
				leftFirst = leftNow
			}
			return fmt.Errorf("left: %s", strings.Join(leftNow[:min(5, len(leftNow))], "; "))
		}
		return nil
	})
	s.Figure("time until nothing was left after the last loop", took.Seconds(), "s")
	if len(leftFirst) > 0 {
		s.Note("right after the last loop: %d things left, e.g. %s", len(leftFirst), strings.Join(leftFirst[:min(3, len(leftFirst))], "; "))
	}
	s.Check("nothing left at the end (sandboxes, containers, pod and log directories, mounts)", err == nil, orNone(errString(err)))
}

// leftCount counts PodLeftovers by kind (their first word).
type leftCount struct {
	total  int
	byKind map[string]int
}

func leftKinds(left []string) leftCount {
	c := leftCount{total: len(left), byKind: map[string]int{}}
	for _, l := range left {
		kind, _, _ := strings.Cut(l, " ")
		c.byKind[kind]++
	}
	return c
}

func (c leftCount) String() string { return fmt.Sprint(c.byKind) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
