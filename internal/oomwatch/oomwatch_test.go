package oomwatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  *OOM
	}{{
		name: "global OOM (kernel 5.0 on)",
		lines: []string{
			"stress invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
			"Mem-Info:",
			"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/session-1.scope,task=stress,pid=4242,uid=0",
			"Out of memory: Killed process 4242 (stress) total-vm:1GkB, anon-rss:1GkB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:2MkB oom_score_adj:0",
		},
		want: &OOM{Process: "stress", PID: 4242, Container: "/", VictimContainer: "/"},
	}, {
		name: "a cgroup's limit (kernel 5.0 on)",
		lines: []string{
			"python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=999",
			"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-abc,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/pod1,task_memcg=/kubepods.slice/kubepods-burstable.slice/pod1/cri-abc,task=python,pid=77,uid=0",
			"Memory cgroup out of memory: Killed process 77 (python) total-vm:10kB",
		},
		want: &OOM{Process: "python", PID: 77, Container: "/kubepods.slice/kubepods-burstable.slice/pod1/cri-abc", VictimContainer: "/kubepods.slice/kubepods-burstable.slice/pod1"},
	}, {
		name: "legacy kernel, a cgroup's limit",
		lines: []string{
			"java invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0",
			"Task in /docker/abc killed as a result of limit of /docker/abc",
			"Memory cgroup out of memory: Killed process 99 (java) total-vm:10kB",
		},
		want: &OOM{Process: "java", PID: 99, Container: "/docker/abc", VictimContainer: "/docker/abc"},
	}, {
		name:  "a kill without the first line is not followed",
		lines: []string{"Out of memory: Killed process 1 (init)"},
	}, {
		name:  "other messages",
		lines: []string{"eth0: link up", "EXT4-fs (sda1): mounted filesystem"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var p Parser
			var got *OOM
			for _, l := range tc.lines {
				if o := p.Feed(l); o != nil {
					if got != nil {
						t.Fatalf("two kills: %+v and %+v", *got, *o)
					}
					got = o
				}
			}
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("got %+v, want %+v", got, tc.want)
			case got != nil && *got != *tc.want:
				t.Fatalf("got %+v, want %+v", *got, *tc.want)
			}
			if got != nil && got.System() != (tc.want.VictimContainer == "/") {
				t.Fatalf("System() = %v", got.System())
			}
		})
	}
}

func TestMessage(t *testing.T) {
	for in, want := range map[string]string{
		"6,1234,5678,-;eth0: link up\n":                      "eth0: link up",
		"4,10,20,c;a;b\n SUBSYSTEM=net\n DEVICE=+net:eth0\n": "a;b",
		"no separator": "",
	} {
		got, ok := Message(in)
		if got != want || ok != (want != "") {
			t.Errorf("Message(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestWatchUnreadable: a kernel log that cannot be opened is an error at
// once, which the caller logs, and nothing is found.
func TestWatchUnreadable(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "kmsg"), func(OOM) { t.Error("found an OOM") })
	if !os.IsNotExist(err) {
		t.Fatalf("err %v, want not exist", err)
	}
}

// TestReadStopsWithContext: a reader waiting on the log ends with ctx;
// the kills it read are found, record by record.
func TestReadStopsWithContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	found := make(chan OOM, 1)
	done := make(chan error, 1)
	go func() { done <- read(ctx, r, func(o OOM) { found <- o }) }()
	for _, rec := range []string{
		"6,1,1,-;stress invoked oom-killer: gfp_mask=0x0, order=0, oom_score_adj=0\n",
		"3,2,2,-;Out of memory: Killed process 4242 (stress) total-vm:1kB\n",
	} {
		if _, err := w.Write([]byte(rec)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // one record a read, as /dev/kmsg gives them
	}
	select {
	case o := <-found:
		if !o.System() || o.Process != "stress" || o.PID != 4242 {
			t.Fatalf("found %+v", o)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no OOM found")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("read after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read did not end with its context")
	}
}
