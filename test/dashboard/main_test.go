// Package dashboard tests the live actor dashboard (issue #6) in a real
// browser: Debian's chromium, driven by chromedp, kept off the network. One
// test opens the dashboard of a standalone actorlet and watches a new pod's
// worker appear and restart; another draws an in-process tree of 110
// pod-workers. Each writes a screenshot into the artifacts directory.
package dashboard

import (
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }
