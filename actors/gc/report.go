package gc

import (
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

// nodeEvent logs a GC event and records it on the node, as upstream's
// kubelet does with its node reference (the UID is the node's name).
func (a *Actor) nodeEvent(reason, message string) {
	a.log.Warn().Str("event", reason).Str("node", a.p.NodeName).Msg(message)
	if a.p.Events == nil {
		return
	}
	ref := &v1.ObjectReference{Kind: "Node", Name: a.p.NodeName, UID: types.UID(a.p.NodeName)}
	a.p.Events.Event(ref, v1.EventTypeWarning, reason, message)
}

// recordPass records one pass's duration, end and result.
func recordPass(kind string, d time.Duration, ok bool) {
	result := metrics.GCResultSuccess
	if !ok {
		result = metrics.GCResultFailure
	}
	metrics.GCDuration.WithLabelValues(kind).Observe(d.Seconds())
	metrics.GCRuns.WithLabelValues(kind, result).Inc()
	metrics.GCLastRun.WithLabelValues(kind).Set(float64(time.Now().Unix()))
}

// setLast keeps a one-line account of the latest pass of kind and shows
// every kind's on the dashboard as the actor's state.
func (a *Actor) setLast(ctx actor.Context, kind string, at time.Time, d time.Duration, errs int, format string, args ...any) {
	line := fmt.Sprintf("%s %s: "+format, append([]any{kind, at.Format("15:04:05")}, args...)...)
	line += fmt.Sprintf(" in %s", d.Round(time.Millisecond))
	if errs > 0 {
		line += fmt.Sprintf(", %d errors", errs)
	}
	a.last[kind] = line
	if a.p.Registry != nil {
		a.p.Registry.SetState(ctx.Self().Id, a.state())
	}
}

// state is the last pass of each kind, in a fixed order, on one line.
func (a *Actor) state() string {
	var parts []string
	for _, kind := range []string{metrics.GCKindContainer, metrics.GCKindImage, metrics.GCKindLogRotation} {
		if l, ok := a.last[kind]; ok {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// health is always healthy (upstream does not fail /healthz on GC); the
// detail carries the counters and the last passes.
func (a *Actor) health() *messages.HealthReport {
	t := a.totals
	detail := fmt.Sprintf("%d container passes, %d image passes; removed %d containers, %d sandboxes, %d images (%d bytes); rotated %d logs",
		t.containerPasses, t.imagePasses, t.containers, t.sandboxes, t.images, t.bytes, t.logsRotated)
	if s := a.state(); s != "" {
		detail += "; " + s
	}
	if a.lastErr != nil {
		detail += fmt.Sprintf("; last pass: %d errors, first: %v", a.lastErrCount, a.lastErr)
	}
	return &messages.HealthReport{Name: Kind, Healthy: true, Detail: detail, LastActivity: a.lastRun}
}
