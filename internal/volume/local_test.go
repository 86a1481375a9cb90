package volume

import (
	"os"
	"testing"
)

// The helpers of the local volumes' tests carry a "local" prefix: the
// package's other tests (content volumes) are written beside them.

func localNeedsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
}

func localMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
