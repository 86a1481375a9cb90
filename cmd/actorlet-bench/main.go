// Command actorlet-bench is issue #8's benchmark (`make bench`, `make
// bench-churn`, docs/performance.md): pod start-up and deletion latency,
// CPU and memory of actorlet as the node of the test environment's API
// server, beside the floor of the same pods created straight through CRI.
// It only measures; it changes nothing in actorlet.
//
// A run writes report.md, results.json and logs/ (actorlet's logs, which
// git ignores) to results/bench/VARIANT/ at the repository's root, VARIANT
// being pods, churn, probes, sa-token or probes-sa-token; a run of another
// binary (-binary) or configuration (-config), an experiment, writes to
// results/tmp/bench/VARIANT/, which git ignores; -results names any other
// directory.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/test/env"
)

type options struct {
	sizes      []int
	runs       int
	resultsDir string
	only       string // "", "floor" or "actorlet"
	churn      bool
	churnLoops int
	churnPods  int
	binary     string
	verbose    bool
	agent      agentOptions
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "actorlet-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "actorlet-bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("actorlet-bench", flag.ContinueOnError)
	sizes := fs.String("n", "10,30,60,110", "pod counts to run, comma-separated")
	fs.IntVar(&o.runs, "runs", 3, "runs per pod count (the table shows their median)")
	fs.StringVar(&o.resultsDir, "results", "", "directory for report.md, results.json and logs/, replacing the last run's (default: results/bench/VARIANT in the repository, results/tmp/bench/VARIANT with -binary or -config)")
	fs.StringVar(&o.only, "only", "", "run only one side: floor or actorlet")
	fs.BoolVar(&o.churn, "churn", false, "run the churn benchmark instead of the pod counts")
	fs.IntVar(&o.churnLoops, "churn-loops", 20, "churn: loops")
	fs.IntVar(&o.churnPods, "churn-pods", 20, "churn: pods per loop")
	fs.StringVar(&o.binary, "binary", "", "actorlet binary to measure (default: build ./cmd/actorlet)")
	fs.BoolVar(&o.verbose, "v", false, "log each step")
	fs.StringVar(&o.agent.extraConfig, "config", "", "KubeletConfiguration YAML lines appended to the benchmark's (experiments, e.g. \"kubeAPIQPS: 100\")")
	fs.IntVar(&o.agent.verbosity, "agent-v", 0, "actorlet's -v in its logs (logs/ of the results directory)")
	fs.BoolVar(&saToken, "sa-token", false, "give every pod the default service-account token volume (the floor's pods get none)")
	fs.BoolVar(&withProbes, "probes", false, "give every pod three probes at periodSeconds 1 (startup and readiness httpGet, liveness tcpSocket; the floor's pods get none) and hold them Ready for a while, measuring actorlet's CPU")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for f := range strings.SplitSeq(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-n %q: %q is not a positive pod count", *sizes, f)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.runs < 1 {
		return o, fmt.Errorf("-runs %d: need at least 1", o.runs)
	}
	if o.only != "" && o.only != "floor" && o.only != "actorlet" {
		return o, fmt.Errorf("-only %q: want floor or actorlet", o.only)
	}
	if o.churnLoops < 2 || o.churnPods < 1 {
		return o, fmt.Errorf("-churn-loops %d -churn-pods %d: need at least 2 loops (loop 2 is the reference) and 1 pod", o.churnLoops, o.churnPods)
	}
	return o, nil
}

func run(ctx context.Context, o options) error {
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	logf := func(format string, args ...any) {
		if o.verbose {
			say(format, args...)
		}
	}
	say("bringing up the environment (hack/node-env up --with-apiserver)")
	e, err := env.Load(env.WithAPIServer())
	if err != nil {
		return err
	}
	root, err := env.RepoRoot()
	if err != nil {
		return err
	}
	dir := o.resultsDir
	if dir == "" {
		dir = defaultResultsDir(root, o)
	}
	logDir := filepath.Join(dir, "logs")
	for _, old := range []string{"report.md", "results.json", "logs"} {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	built := o.binary == ""
	if built {
		tmp, err := os.MkdirTemp("", "actorlet-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		o.binary = filepath.Join(tmp, "actorlet")
		say("building actorlet")
		if err := buildActorlet(root, o.binary); err != nil {
			return err
		}
	} else if o.binary, err = filepath.Abs(o.binary); err != nil {
		return err
	}

	say("waiting for the runtime lock (tests running actorlet or CRI pods hold it)")
	if err := acquireLock(ctx); err != nil {
		return err
	}
	defer env.ReleaseRuntimeLock()

	conn, err := dialCRI(e.RuntimeEndpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctrd, err := containerdPID(e.StateDir)
	if err != nil {
		return err
	}
	admin, err := adminClient(e.AdminKubeconfig)
	if err != nil {
		return err
	}
	res := &results{Date: time.Now().Format(time.DateOnly), Runs: o.runs, Only: o.only, Binary: o.binary, Host: hostInfo()}
	if built {
		res.Binary = "built from " + describe(root)
	}
	if res.Host.OtherPods, err = otherPods(ctx, admin, e.NodeName); err != nil {
		return err
	}
	if res.Host.OtherPods > 0 {
		say("warning: %d pods of other namespaces are bound to %s; actorlet will run them too", res.Host.OtherPods, e.NodeName)
	}
	nb := &nodeBench{env: e, admin: admin, rt: rt, binary: o.binary, agent: o.agent, container: ctrd, logDir: logDir, logf: logf}
	save := func() error { return writeJSON(filepath.Join(dir, "results.json"), res) }

	var runErr error
	if o.churn {
		say("churn: %d pods × %d loops", o.churnPods, o.churnLoops)
		res.Churn, runErr = nb.churn(ctx, o.churnPods, o.churnLoops)
		res.Targets = churnTargets(res.Churn)
	} else {
		fl := &floor{rt: rt, img: img, image: e.BusyboxImage, node: e.NodeName, container: ctrd, logf: logf,
			opts: podruntime.Options{
				// actorlet's defaults: upstream's resolvConf and cgroupRoot.
				PodLogsDir: filepath.Join(e.StateDir, "pods"), ResolvConf: "/etc/resolv.conf",
				CgroupParentRoot: "/kubepods", NodeName: e.NodeName, NodeIP: "127.0.0.1",
			}}
		runErr = runSizes(ctx, o, res, fl, nb, say, save)
		if o.only != "floor" {
			res.Targets = checkTargets(res.Sizes, nil)
		}
	}
	if err := save(); err != nil {
		return err
	}
	var report bytes.Buffer
	writeReport(&report, res)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), report.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Print("\n" + report.String())
	say("results in %s (report.md, results.json, logs/)", dir)
	return runErr
}

// defaultResultsDir is where a run writes without -results: one directory
// a variant, each run replacing the last (docs/performance.md links them;
// git keeps the runs before), or for an experiment on another binary or
// configuration, the same under results/tmp/, which git ignores.
func defaultResultsDir(root string, o options) string {
	variant := "pods"
	switch {
	case o.churn:
		variant = "churn"
	case withProbes && saToken:
		variant = "probes-sa-token"
	case withProbes:
		variant = "probes"
	case saToken:
		variant = "sa-token"
	}
	base := filepath.Join(root, "results", "bench")
	if o.binary != "" || o.agent.extraConfig != "" {
		base = filepath.Join(root, "results", "tmp", "bench")
	}
	return filepath.Join(base, variant)
}

// runSizes runs, for each N, the runs of the floor and of actorlet in turn,
// so that both see the same machine. A failed run is recorded and the next
// one starts; an interrupt ends them all.
func runSizes(ctx context.Context, o options, res *results, fl *floor, nb *nodeBench, say func(string, ...any), save func() error) error {
	var failed []string
	for _, n := range o.sizes {
		res.Sizes = append(res.Sizes, sizeResult{N: n})
		s := &res.Sizes[len(res.Sizes)-1]
		for r := range o.runs {
			if o.only != "actorlet" {
				f, err := fl.run(ctx, n)
				if err != nil && !slices.Contains(f.Errors, err.Error()) {
					f.Errors = append(f.Errors, err.Error())
				}
				s.Floor = append(s.Floor, f)
				if err != nil {
					say("floor N=%d run %d failed: %v", n, r+1, err)
					failed = append(failed, fmt.Sprintf("floor N=%d run %d", n, r+1))
				} else {
					say("floor    N=%-3d run %d: p50 %.2fs p99 %.2fs all-running %.2fs all-removed %.2fs",
						n, r+1, percentile(f.Latencies, 50), percentile(f.Latencies, 99), f.AllRunning, f.AllRemoved)
				}
			}
			if ctx.Err() == nil && o.only != "floor" {
				a, err := nb.run(ctx, n, fmt.Sprintf("actorlet-n%d-run%d", n, r+1))
				s.Actorlet = append(s.Actorlet, a)
				if err != nil {
					say("actorlet N=%d run %d failed: %v", n, r+1, err)
					failed = append(failed, fmt.Sprintf("actorlet N=%d run %d", n, r+1))
				} else {
					say("actorlet N=%-3d run %d: p50 %.2fs p99 %.2fs max %.2fs gone API %.2fs CRI %.2fs, %.3f CPU-s/pod, peak %.1f MiB, idle %.1f MiB",
						n, r+1, percentile(a.Latencies, 50), percentile(a.Latencies, 99), percentile(a.Latencies, 100), a.GoneAPI, a.GoneCRI,
						a.Actorlet.CPUSeconds/float64(n), toMiB(a.Actorlet.PeakRSS), toMiB(a.IdleRSS))
				}
			}
			if err := save(); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", ctx.Err())
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d runs failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// acquireLock takes the machine-wide runtime lock, giving up on an
// interrupt (the waiting goroutine ends with the process).
func acquireLock(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- env.AcquireRuntimeLock() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the runtime lock: %w", ctx.Err())
	}
}

func buildActorlet(root, out string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "build", "-o", out, "./cmd/actorlet")
	cmd.Dir = root
	if raw, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build actorlet (%s build ./cmd/actorlet in %s): %v\n%s", goCmd, root, err, raw)
	}
	return nil
}

// adminClient is a clientset of the admin user whose client-side rate
// limit is far above what the benchmark sends: with client-go's default
// 5 QPS the creates, not the node, would be measured.
func adminClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return kubernetes.NewForConfig(cfg)
}

// otherPods counts the pods bound to the node before the benchmark starts.
func otherPods(ctx context.Context, admin kubernetes.Interface, nodeName string) (int, error) {
	pods, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return 0, fmt.Errorf("list pods bound to %s: %w", nodeName, err)
	}
	return len(pods.Items), nil
}

func hostInfo() host {
	h := host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(raw))
	}
	return h
}

// describe names the source the binary was built from, for comparing
// before and after a change.
func describe(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "git describe: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}
