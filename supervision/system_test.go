package supervision

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestSetLoggerRedirectsProtoactorLogs(t *testing.T) {
	var before, after bytes.Buffer
	system := NewSystem(zerolog.New(&before).Level(zerolog.WarnLevel))
	defer system.Shutdown()
	derived := system.Logger().With("lib", "Proto.Actor")
	system.SetLogger(zerolog.New(&after).Level(zerolog.DebugLevel))
	derived.Info("routine")
	derived.Warn("trouble")
	if before.Len() != 0 {
		t.Errorf("old logger still written: %q", before.String())
	}
	out := after.String()
	if !strings.Contains(out, `"level":"debug"`) || !strings.Contains(out, `"message":"routine"`) ||
		!strings.Contains(out, `"level":"warn"`) || !strings.Contains(out, `"lib":"Proto.Actor"`) {
		t.Errorf("new logger got %q: want info demoted to debug, warn kept, attrs kept", out)
	}
}
