package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// actors is a fake actor tree: the counts its ActorLister reports.
type actors []ActorCounts

func (a *actors) list() []ActorCounts { return *a }

func TestActorCollector(t *testing.T) {
	t0 := time.Unix(1000, 0)
	worker := func(name string, processed uint64, restarts int) ActorCounts {
		return ActorCounts{Path: "pod-manager/" + name, Kind: "pod-worker", Started: t0,
			Processed: processed, MeanHandling: time.Millisecond, Restarts: restarts}
	}
	pleg := func(depth int64, processed uint64) ActorCounts {
		return ActorCounts{Path: "pleg", Kind: "pleg", Started: t0, MailboxDepth: depth,
			Processed: processed, MeanHandling: time.Millisecond}
	}
	var tree actors
	own := prometheus.NewPedanticRegistry()
	own.MustRegister(NewActorCollector(tree.list))
	// Each stage is the tree at a scrape, and what the scrape reports; the
	// stages run in order against one collector.
	for _, stage := range []struct {
		name string
		tree actors
		want map[string]map[string]float64
	}{
		{name: "pleg blocked with 3 in its mailbox",
			tree: actors{worker("a", 2, 0), worker("b", 2, 0), worker("c", 2, 0), pleg(3, 0)},
			want: map[string]map[string]float64{
				"actorlet_actors":                           {"pod-worker": 3, "pleg": 1},
				"actorlet_actor_mailbox_depth":              {"pod-worker": 0, "pleg": 3},
				"actorlet_actor_messages_processed_total":   {"pod-worker": 6, "pleg": 0},
				"actorlet_actor_message_processing_seconds": {"pod-worker": 6},
				"actorlet_actor_restarts_total":             {"pod-worker": 0, "pleg": 0},
			}},
		{name: "a worker restarted",
			tree: actors{worker("a", 3, 1), worker("b", 2, 0), worker("c", 2, 0), pleg(0, 3)},
			want: map[string]map[string]float64{
				"actorlet_actor_restarts_total":           {"pod-worker": 1, "pleg": 0},
				"actorlet_actor_messages_processed_total": {"pod-worker": 7, "pleg": 3},
			}},
		{name: "a stopped worker's counts stay counted",
			tree: actors{worker("a", 3, 1), worker("c", 2, 0), pleg(0, 3)},
			want: map[string]map[string]float64{
				"actorlet_actors":                           {"pod-worker": 2, "pleg": 1},
				"actorlet_actor_messages_processed_total":   {"pod-worker": 7, "pleg": 3},
				"actorlet_actor_message_processing_seconds": {"pod-worker": 7, "pleg": 3},
				"actorlet_actor_restarts_total":             {"pod-worker": 1},
			}},
		{name: "a later actor at the same path adds to the earlier one's counts",
			tree: actors{worker("a", 3, 1), {Path: "pod-manager/c", Kind: "pod-worker", Started: t0.Add(time.Second), Processed: 1}, pleg(0, 3)},
			want: map[string]map[string]float64{
				"actorlet_actors":                         {"pod-worker": 2},
				"actorlet_actor_messages_processed_total": {"pod-worker": 8},
			}},
		{name: "a kind whose actors are all gone reports 0 live beside its counters",
			tree: actors{pleg(0, 4)},
			want: map[string]map[string]float64{
				"actorlet_actors":                         {"pod-worker": 0, "pleg": 1},
				"actorlet_actor_messages_processed_total": {"pod-worker": 8, "pleg": 4},
				"actorlet_actor_restarts_total":           {"pod-worker": 1},
			}},
	} {
		tree = stage.tree
		mfs := gather(t, own)
		for name, byKind := range stage.want {
			for kind, v := range byKind {
				m := find(mfs[name], map[string]string{"kind": kind})
				if m == nil {
					t.Errorf("%s: no %s{kind=%q}", stage.name, name, kind)
					continue
				}
				if got := value(m); got != v {
					t.Errorf("%s: %s{kind=%q} = %v, want %v", stage.name, name, kind, got, v)
				}
			}
		}
		// Every series is by kind: one per kind, however many actors.
		for name, mf := range mfs {
			if n := len(mf.GetMetric()); n != 2 {
				t.Errorf("%s: %s has %d series, want one per kind (2)", stage.name, name, n)
			}
		}
	}
}

// value is a gauge's or counter's value, or a summary's count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	}
	return -1
}

func TestRegisterActorsIsReportedOnRegistry(t *testing.T) {
	tree := actors{{Path: "config-source", Kind: "config-source", Started: time.Now()}}
	RegisterActors(tree.list)
	RegisterActors(tree.list) // a second call is harmless
	defer RegisterActors(nil)
	m := find(gather(t, Registry)["actorlet_actors"], map[string]string{"kind": "config-source"})
	if m == nil || value(m) != 1 {
		t.Fatalf("actorlet_actors{kind=config-source} on Registry = %v, want 1", m)
	}
}
