package supervision

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TimelineLength is how many received messages the registry keeps per actor:
// enough to answer "why is my pod stuck" without unbounded memory.
const TimelineLength = 200

// ExternalSender names the sender of messages sent from outside the actor
// tree (signal handlers, HTTP handlers, watchers' goroutines).
const ExternalSender = "external"

// Registry knows every live actor of the tree, what it received lately and
// how messages flow between actor kinds. It is safe for concurrent use: the
// actors write it from their own goroutines, the dashboard reads it.
type Registry struct {
	mu     sync.RWMutex
	actors map[string]*entry

	edgesMu sync.Mutex
	edges   map[EdgeKey]uint64

	stepsMu sync.Mutex
	steps   []Step
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{actors: map[string]*entry{}, edges: map[EdgeKey]uint64{}}
}

// ActorInfo is a snapshot of one live actor.
type ActorInfo struct {
	Path     string    `json:"path"`
	Kind     string    `json:"kind"`
	Parent   string    `json:"parent,omitempty"`
	Started  time.Time `json:"started"`
	Restarts int       `json:"restarts"`
	// LastFailure is the reason of the latest failure its supervisor handled.
	LastFailure   string    `json:"lastFailure,omitempty"`
	LastFailureAt time.Time `json:"lastFailureAt,omitzero"`
	MailboxDepth  int64     `json:"mailboxDepth"`
	Processed     uint64    `json:"processed"`
	// MeanHandling is the mean time Receive took per message.
	MeanHandling time.Duration `json:"meanHandlingNanos"`
	// State is what the actor last said of itself with SetState (a
	// pod-worker: its state machine's phase); empty if it never did.
	State string `json:"state,omitempty"`
}

// MessageRecord is one message an actor received.
type MessageRecord struct {
	At      time.Time `json:"at"`
	Type    string    `json:"type"`
	Sender  string    `json:"sender"`
	Summary string    `json:"summary"`
}

// EdgeKey identifies a flow of one message type from one actor kind to another.
type EdgeKey struct {
	From string `json:"from"`
	To   string `json:"to"`
	Type string `json:"type"`
}

// Edge counts the messages that flowed along an EdgeKey.
type Edge struct {
	EdgeKey
	Count uint64 `json:"count"`
}

// Step is one bootstrap step with its duration and outcome.
type Step struct {
	Name     string        `json:"name"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"durationNanos"`
	Err      string        `json:"error,omitempty"`
}

type entry struct {
	path, kind, parent string
	started            time.Time
	mailbox            *mailboxStats

	mu            sync.Mutex
	state         string
	restarts      int
	lastFailure   string
	lastFailureAt time.Time
	processed     uint64
	handling      time.Duration
	// timeline grows to TimelineLength, then is a ring whose oldest record
	// is at timelineNext: most actors (a pod-worker) see few messages in
	// their life, and a full node's workers each holding a whole ring
	// from the start would be heap spent on nothing.
	timeline     []MessageRecord
	timelineNext int
}

// mailboxStats counts a mailbox's posted and received user messages; their
// difference is the mailbox depth.
type mailboxStats struct {
	posted, received atomic.Int64
}

func (m *mailboxStats) MailboxStarted()     {}
func (m *mailboxStats) MessagePosted(any)   { m.posted.Add(1) }
func (m *mailboxStats) MessageReceived(any) { m.received.Add(1) }
func (m *mailboxStats) MailboxEmpty()       {}
func (m *mailboxStats) depth() int64        { return m.posted.Load() - m.received.Load() }

var _ actor.MailboxMiddleware = (*mailboxStats)(nil)

func (r *Registry) register(self, parent *actor.PID, kind string, mbox *mailboxStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.actors[self.Id]; ok {
		return // a restart: the actor keeps its entry, mailbox and history
	}
	e := &entry{path: self.Id, kind: kind, started: time.Now(), mailbox: mbox}
	if parent != nil {
		e.parent = parent.Id
	}
	r.actors[self.Id] = e
}

func (r *Registry) remove(self *actor.PID) {
	r.mu.Lock()
	delete(r.actors, self.Id)
	r.mu.Unlock()
}

func (r *Registry) lookup(pid *actor.PID) *entry {
	if pid == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.actors[pid.Id]
}

func (r *Registry) restarted(self *actor.PID) {
	if e := r.lookup(self); e != nil {
		e.mu.Lock()
		e.restarts++
		e.mu.Unlock()
	}
}

func (r *Registry) failed(child *actor.PID, reason string) {
	if e := r.lookup(child); e != nil {
		e.mu.Lock()
		e.lastFailure, e.lastFailureAt = reason, time.Now()
		e.mu.Unlock()
	}
}

// received records a message on the receiver's timeline and on its edge, and
// returns the entry so that the handling time can be added afterwards.
func (r *Registry) received(self, sender *actor.PID, msgType, summary string, countEdge bool) *entry {
	e := r.lookup(self)
	if e == nil {
		return nil
	}
	from := ExternalSender
	if s := r.lookup(sender); s != nil {
		from = s.kind
	}
	senderName := from
	if sender != nil {
		senderName = sender.Id
	}
	e.mu.Lock()
	rec := MessageRecord{At: time.Now(), Type: msgType, Sender: senderName, Summary: summary}
	if len(e.timeline) < TimelineLength {
		e.timeline = append(e.timeline, rec)
	} else {
		e.timeline[e.timelineNext] = rec
		e.timelineNext = (e.timelineNext + 1) % TimelineLength
	}
	e.mu.Unlock()
	if countEdge {
		r.edgesMu.Lock()
		r.edges[EdgeKey{From: from, To: e.kind, Type: msgType}]++
		r.edgesMu.Unlock()
	}
	return e
}

func (e *entry) handled(d time.Duration) {
	e.mu.Lock()
	e.processed++
	e.handling += d
	e.mu.Unlock()
}

func (e *entry) info() ActorInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	info := ActorInfo{
		Path: e.path, Kind: e.kind, Parent: e.parent, Started: e.started,
		Restarts: e.restarts, LastFailure: e.lastFailure, LastFailureAt: e.lastFailureAt,
		MailboxDepth: e.mailbox.depth(), Processed: e.processed, State: e.state,
	}
	if e.processed > 0 {
		info.MeanHandling = e.handling / time.Duration(e.processed)
	}
	return info
}

// SetState records the state the actor at path is in (for a pod-worker, its
// state machine's phase), for the dashboard. It is kept across the actor's
// restarts until the next SetState, and forgotten with the actor. It reports
// whether a live actor is at path; a state for an unknown path is dropped.
func (r *Registry) SetState(path, state string) bool {
	r.mu.RLock()
	e, ok := r.actors[path]
	r.mu.RUnlock()
	if !ok {
		return false
	}
	e.mu.Lock()
	e.state = state
	e.mu.Unlock()
	return true
}

// Actors returns a snapshot of every live actor, ordered by path so that a
// parent comes before its children.
func (r *Registry) Actors() []ActorInfo {
	r.mu.RLock()
	entries := make([]*entry, 0, len(r.actors))
	for _, e := range r.actors {
		entries = append(entries, e)
	}
	r.mu.RUnlock()
	out := make([]ActorInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Actor returns the snapshot of the actor at path, if it is alive.
func (r *Registry) Actor(path string) (ActorInfo, bool) {
	r.mu.RLock()
	e, ok := r.actors[path]
	r.mu.RUnlock()
	if !ok {
		return ActorInfo{}, false
	}
	return e.info(), true
}

// Timeline returns the last messages (at most TimelineLength) the actor at
// path received, oldest first.
func (r *Registry) Timeline(path string) []MessageRecord {
	r.mu.RLock()
	e, ok := r.actors[path]
	r.mu.RUnlock()
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]MessageRecord, 0, len(e.timeline))
	out = append(out, e.timeline[e.timelineNext:]...)
	return append(out, e.timeline[:e.timelineNext]...)
}

// Edges returns the message counts per (sender kind, receiver kind, type).
func (r *Registry) Edges() []Edge {
	r.edgesMu.Lock()
	out := make([]Edge, 0, len(r.edges))
	for k, n := range r.edges {
		out = append(out, Edge{EdgeKey: k, Count: n})
	}
	r.edgesMu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return strings.Join([]string{a.From, a.To, a.Type}, "\x00") < strings.Join([]string{b.From, b.To, b.Type}, "\x00")
	})
	return out
}

// RecordStep keeps one bootstrap step for the dashboard.
func (r *Registry) RecordStep(s Step) {
	r.stepsMu.Lock()
	r.steps = append(r.steps, s)
	r.stepsMu.Unlock()
}

// Steps returns the bootstrap steps run so far, in order.
func (r *Registry) Steps() []Step {
	r.stepsMu.Lock()
	defer r.stepsMu.Unlock()
	return append([]Step(nil), r.steps...)
}
