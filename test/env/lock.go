package env

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// agentLock counts this test binary's holders of the runtime lock: running
// actorlets and tests that create pods in the runtime themselves. The first
// takes the machine-wide flock and the last releases it. flock is per open
// file, so a second flock from this process would wait for itself.
var agentLock struct {
	mu    sync.Mutex
	count int
	file  *os.File
}

// AcquireRuntimeLock takes the machine-wide runtime lock. Two actorlets on
// one containerd remove each other's pods as orphans, and an actorlet
// removes pods that a test created directly; so every test binary that runs
// actorlet or creates pods holds the lock meanwhile, and test binaries
// running at the same time take turns.
func AcquireRuntimeLock() error {
	agentLock.mu.Lock()
	defer agentLock.mu.Unlock()
	if agentLock.count > 0 {
		agentLock.count++
		return nil
	}
	path := filepath.Join(os.TempDir(), "actorlet-agent.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return fmt.Errorf("open agent lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return fmt.Errorf("lock %s: %w", path, err)
	}
	agentLock.file, agentLock.count = f, 1
	return nil
}

// ReleaseRuntimeLock releases what AcquireRuntimeLock took.
func ReleaseRuntimeLock() {
	agentLock.mu.Lock()
	defer agentLock.mu.Unlock()
	agentLock.count--
	if agentLock.count == 0 {
		agentLock.file.Close() // closing the file drops the flock
		agentLock.file = nil
	}
}

// HoldRuntime holds the runtime lock until t ends, for tests that create
// pods in the runtime themselves.
func HoldRuntime(t testing.TB) {
	t.Helper()
	if err := AcquireRuntimeLock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ReleaseRuntimeLock)
}
