package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The actor metrics are read from the actor tree's registry at scrape time
// and aggregated by actor kind: a node has one pod-worker per pod, and one
// series per kind keeps /metrics the same size whatever the pod count.

// ActorCounts is what the actor metrics read of one live actor.
type ActorCounts struct {
	// Path names the actor; Started tells it from a later actor at the
	// same path.
	Path    string
	Kind    string
	Started time.Time
	// MailboxDepth is how many messages wait in its mailbox.
	MailboxDepth int64
	// Processed counts the messages it handled, MeanHandling is the mean
	// time it took per message, Restarts counts its restarts.
	Processed    uint64
	MeanHandling time.Duration
	Restarts     int
}

// ActorLister lists the live actors of an actor tree. The wiring adapts the
// tree's registry (supervision.Registry) to it, so that metrics, a
// mechanism, does not import the actor framework.
type ActorLister func() []ActorCounts

var (
	actorsDesc = prometheus.NewDesc("actorlet_actors",
		"Number of live actors, by actor kind.", []string{"kind"}, nil)
	mailboxDepthDesc = prometheus.NewDesc("actorlet_actor_mailbox_depth",
		"Messages waiting in the mailboxes of the live actors, by actor kind.", []string{"kind"}, nil)
	processedDesc = prometheus.NewDesc("actorlet_actor_messages_processed_total",
		"Cumulative number of messages actors handled, by actor kind.", []string{"kind"}, nil)
	processingDesc = prometheus.NewDesc("actorlet_actor_message_processing_seconds",
		"Time actors spent handling messages, by actor kind.", []string{"kind"}, nil)
	restartsDesc = prometheus.NewDesc("actorlet_actor_restarts_total",
		"Cumulative number of actor restarts by their supervisors, by actor kind.", []string{"kind"}, nil)
)

// ActorCollector reports the actors an ActorLister lists, by kind.
//
// The registry forgets an actor once it stops, with its counts; the
// collector keeps what each stopped actor had reached at the previous
// scrape, so that the counters of a kind never go down when a pod-worker
// goes (what it handled after that scrape is not counted).
type ActorCollector struct {
	source func() ActorLister

	mu sync.Mutex
	// live holds the counts of each actor seen at the previous scrape, by
	// path; retired holds, by kind, the counts of the actors gone since.
	live    map[string]actorCounts
	retired map[string]kindCounts
}

// actorCounts are one actor's cumulative counts at a scrape. started tells
// an actor from a later one at the same path.
type actorCounts struct {
	kind    string
	started time.Time
	counts  kindCounts
}

// kindCounts are cumulative counts, summed over actors.
type kindCounts struct {
	processed uint64
	handling  time.Duration
	restarts  uint64
}

func (c *kindCounts) add(o kindCounts) {
	c.processed += o.processed
	c.handling += o.handling
	c.restarts += o.restarts
}

// NewActorCollector returns a collector of the actors list lists, for a
// prometheus registry of one's own (a test's).
func NewActorCollector(list ActorLister) *ActorCollector {
	return newActorCollector(func() ActorLister { return list })
}

func newActorCollector(source func() ActorLister) *ActorCollector {
	return &ActorCollector{source: source, live: map[string]actorCounts{}, retired: map[string]kindCounts{}}
}

// Describe implements prometheus.Collector.
func (c *ActorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{actorsDesc, mailboxDepthDesc, processedDesc, processingDesc, restartsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ActorCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.source()
	if list == nil {
		return
	}
	snapshot := list()

	c.mu.Lock()
	live := make(map[string]actorCounts, len(snapshot))
	actors := map[string]int{}
	depth := map[string]int64{}
	for _, a := range snapshot {
		now := actorCounts{kind: a.Kind, started: a.Started, counts: kindCounts{
			processed: a.Processed,
			// The registry keeps the mean only; mean × count is the total
			// to within a nanosecond per message.
			handling: a.MeanHandling * time.Duration(a.Processed),
			restarts: uint64(a.Restarts),
		}}
		if before, ok := c.live[a.Path]; ok && before.started.Equal(a.Started) {
			// The rounding of the mean must not make the sum go down.
			now.counts.handling = max(now.counts.handling, before.counts.handling)
		}
		live[a.Path] = now
		actors[a.Kind]++
		depth[a.Kind] += a.MailboxDepth
	}
	for path, before := range c.live {
		if now, ok := live[path]; !ok || !now.started.Equal(before.started) {
			sum := c.retired[before.kind]
			sum.add(before.counts)
			c.retired[before.kind] = sum
		}
	}
	c.live = live
	totals := make(map[string]kindCounts, len(c.retired))
	for kind, sum := range c.retired {
		totals[kind] = sum
	}
	for _, a := range live {
		t := totals[a.kind]
		t.add(a.counts)
		totals[a.kind] = t
	}
	c.mu.Unlock()

	// A kind whose actors are all gone reports 0 live actors rather than
	// nothing, beside its counters.
	for kind, t := range totals {
		ch <- prometheus.MustNewConstMetric(actorsDesc, prometheus.GaugeValue, float64(actors[kind]), kind)
		ch <- prometheus.MustNewConstMetric(mailboxDepthDesc, prometheus.GaugeValue, float64(depth[kind]), kind)
		ch <- prometheus.MustNewConstMetric(processedDesc, prometheus.CounterValue, float64(t.processed), kind)
		ch <- prometheus.MustNewConstSummary(processingDesc, t.processed, t.handling.Seconds(), nil, kind)
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(t.restarts), kind)
	}
}

// actorSource lists the actors Registry reports.
var actorSource atomic.Pointer[ActorLister]

func init() {
	Registry.MustRegister(newActorCollector(func() ActorLister {
		if list := actorSource.Load(); list != nil {
			return *list
		}
		return nil
	}))
}

// RegisterActors makes /metrics report the actors list lists (nil: none).
// It may be called more than once: the latest is reported (a process runs
// one actor tree; a test that starts several sees its latest).
func RegisterActors(list ActorLister) {
	if list == nil {
		actorSource.Store(nil)
		return
	}
	actorSource.Store(&list)
}
