package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/actorlet/actorlet/test/env"
)

// Options say what Run runs, on which agent.
type Options struct {
	// Specs are the full names of the specs to run.
	Specs []string
	// Focus, when set, keeps only the Specs whose name it matches.
	Focus string
	// Procs is the number of parallel ginkgo processes; specs marked
	// [Serial] run alone after the others, as ginkgo does.
	Procs int
	// Agent is the node agent binary. AgentName names it in messages and
	// files (actorlet, upstream, ...).
	Agent, AgentName string
	// Artifacts is the directory for results.txt (the per-spec table),
	// junit.xml (the selected specs), e2e.log (ginkgo's output), ginkgo's
	// full report.json and the agent's log; emptied first.
	Artifacts string
	// Out gets progress and the per-spec table.
	Out io.Writer
	// Cluster, when set, is the admin kubeconfig of a cluster whose nodes
	// run already (make cluster): Run starts no agent, Specs are ignored,
	// and the whole [Conformance] suite runs, as a certification run does
	// (Focus narrows it).
	Cluster string
}

// ConformanceFocus selects the whole [Conformance] suite.
const ConformanceFocus = `\[Conformance\]`

// Outcome is what Run found.
type Outcome struct {
	Results []Result
	Wall    time.Duration
}

// Run starts the agent as the environment's only node, runs the selected
// specs against it, and writes the per-spec table to opts.Out and
// Artifacts/results.txt, and their JUnit XML to Artifacts/junit.xml. The error is for a run that could not be made;
// failed specs are in the Outcome.
func Run(ctx context.Context, e *env.Env, opts Options) (*Outcome, error) {
	if opts.Cluster != "" {
		return runCluster(ctx, e, opts)
	}
	specs, err := selectSpecs(opts.Specs, opts.Focus)
	if err != nil {
		return nil, err
	}
	if err := prepare(&opts); err != nil {
		return nil, err
	}
	admin, err := adminClient(e)
	if err != nil {
		return nil, err
	}
	n := &node{
		e: e, admin: admin, name: opts.AgentName, binary: opts.Agent,
		dir:     filepath.Join(e.StateDir, "conformance", opts.AgentName),
		logPath: filepath.Join(opts.Artifacts, opts.AgentName+".log"),
	}
	n.rootDir = filepath.Join(n.dir, "root")
	if NeedsDRA(specs) {
		n.rootDir = DRARootDir
		if err := forgetCheckpoints(DRARootDir); err != nil {
			return nil, err
		}
	}
	extra := []string{
		"--container-runtime-endpoint=" + e.RuntimeEndpoint,
		"--kubelet-root-dir=" + n.rootDir,
	}
	storage := NeedsStorageDriver(specs)
	var sidecars string
	if storage {
		flag, err := storageDriverFlag()
		if err != nil {
			return nil, err
		}
		extra = append(extra, flag)
		if sidecars, err = storageSidecars(e); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(opts.Out, "conformance: %d specs against %s (%s), %d processes; artifacts in %s\n",
		len(specs), opts.AgentName, opts.Agent, opts.Procs, opts.Artifacts)
	if err := n.start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err := n.stop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(opts.Out, "conformance: cleaning up after %s: %v\n", opts.AgentName, err)
		}
	}()
	if err := n.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	if NeedsDRA(specs) {
		dc, err := startDRAControllers(e, filepath.Join(opts.Artifacts, "dra-controllers.log"))
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := dc.stop(); err != nil {
				fmt.Fprintf(opts.Out, "conformance: stopping the DRA controllers: %v\n", err)
			}
		}()
	}
	if storage {
		// Stopped before the agent (deferred after it): the provisioned
		// volumes are unmounted and deleted while the node still runs.
		logf := func(format string, args ...any) { fmt.Fprintf(opts.Out, "conformance: "+format+"\n", args...) }
		sd, err := startStorageDriver(ctx, e, n.rootDir, sidecars,
			filepath.Join(opts.Artifacts, "hostpath-csi.log"), logf)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err := sd.stop(); err != nil {
				logf("stopping the CSI driver: %v", err)
			}
		}()
	}
	return ginkgoRun(ctx, e, opts, specs, suiteArgs{
		kubeconfig: e.AdminKubeconfig, focus: FocusOf(specs), extra: extra,
	})
}

// prepare defaults the process count and empties the artifacts
// directory, once the run's selection is known to be valid.
func prepare(opts *Options) error {
	if opts.Procs < 1 {
		opts.Procs = 1
	}
	if err := os.RemoveAll(opts.Artifacts); err != nil {
		return err
	}
	return os.MkdirAll(opts.Artifacts, 0o755)
}

// runCluster runs the [Conformance] suite on a running cluster.
func runCluster(ctx context.Context, e *env.Env, opts Options) (*Outcome, error) {
	focus := ConformanceFocus
	if opts.Focus != "" {
		if _, err := regexp.Compile(opts.Focus); err != nil {
			return nil, fmt.Errorf("focus %q: %w", opts.Focus, err)
		}
		focus = "(?:" + ConformanceFocus + ".*(?:" + opts.Focus + ")|(?:" + opts.Focus + ").*" + ConformanceFocus + ")"
	}
	if err := prepare(&opts); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Out, "conformance: the [Conformance] suite on the %s cluster of %s, %d processes; artifacts in %s\n",
		opts.AgentName, opts.Cluster, opts.Procs, opts.Artifacts)
	return ginkgoRun(ctx, e, opts, nil, suiteArgs{kubeconfig: opts.Cluster, focus: focus})
}

// suiteArgs is what differs between a run on the environment's node and
// one on a cluster.
type suiteArgs struct {
	kubeconfig, focus string
	extra             []string // e2e.test flags
}

// ginkgoRun runs the suite and writes its table and JUnit XML: of specs,
// in their order, or else of every spec that ran.
func ginkgoRun(ctx context.Context, e *env.Env, opts Options, specs []string, sa suiteArgs) (*Outcome, error) {
	start := time.Now()
	if err := runGinkgo(ctx, e, opts, sa); err != nil {
		return nil, err
	}
	out := &Outcome{Wall: time.Since(start)}
	var err error
	out.Results, err = ReadReport(filepath.Join(opts.Artifacts, "report.json"), specs)
	if err != nil {
		return nil, fmt.Errorf("reading the e2e report (log: %s): %w", filepath.Join(opts.Artifacts, "e2e.log"), err)
	}
	var table, junit strings.Builder
	fmt.Fprintf(&table, "# %s against %s, %s, wall time %s\n", time.Now().UTC().Format(time.RFC3339), opts.AgentName, opts.Agent, out.Wall.Round(time.Second))
	WriteTable(&table, out.Results)
	if err := WriteJUnit(&junit, "conformance against "+opts.AgentName, out.Results, out.Wall); err != nil {
		return nil, err
	}
	for name, text := range map[string]string{"results.txt": table.String(), "junit.xml": junit.String()} {
		if err := os.WriteFile(filepath.Join(opts.Artifacts, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(opts.Out, "conformance: %s against %s in %s\n", opts.Artifacts, opts.AgentName, out.Wall.Round(time.Second))
	WriteTable(opts.Out, out.Results)
	return out, nil
}

func selectSpecs(specs []string, focus string) ([]string, error) {
	if focus == "" {
		return specs, nil
	}
	re, err := regexp.Compile(focus)
	if err != nil {
		return nil, fmt.Errorf("focus %q: %w", focus, err)
	}
	var out []string
	for _, s := range specs {
		if re.MatchString(s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("focus %q matches none of the %d specs", focus, len(specs))
	}
	return out, nil
}

func adminClient(e *env.Env) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// runGinkgo runs the e2e suite through the ginkgo CLI. A run with failed
// specs exits non-zero; that is the report's to tell, so only a run
// without a report is an error.
func runGinkgo(ctx context.Context, e *env.Env, opts Options, sa suiteArgs) error {
	art, err := filepath.Abs(opts.Artifacts)
	if err != nil {
		return err
	}
	args := []string{
		"--procs=" + strconv.Itoa(opts.Procs),
		"--timeout=6h",
		"--no-color",
		"--silence-skips",
		"--output-dir=" + art,
		"--json-report=report.json",
		"--focus=" + sa.focus,
		filepath.Join(e.KubeBin, "e2e.test"),
		"--",
		"--kubeconfig=" + sa.kubeconfig,
		"--provider=skeleton",
		"--kubectl-path=" + e.Kubectl,
		"--e2e-output-dir=" + art,
		"--disable-log-dump",
		"--node-os-distro=debian",
	}
	args = append(args, sa.extra...)
	logf, err := os.Create(filepath.Join(art, "e2e.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(e.KubeBin, "ginkgo"), args...)
	cmd.Dir = art
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sa.kubeconfig)
	// On cancellation ginkgo gets SIGINT, as from a terminal: it interrupts
	// its e2e processes, which clean up their namespaces and still write
	// the report. SIGKILL would leave them running.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 3 * time.Minute
	runErr := cmd.Run()
	if _, err := os.Stat(filepath.Join(art, "report.json")); err != nil {
		return fmt.Errorf("ginkgo wrote no report (%v); log: %s", runErr, logf.Name())
	}
	return nil
}
