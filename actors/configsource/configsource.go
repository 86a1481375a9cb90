// Package configsource holds the config-source actor: it reads static pods
// from the manifest path (a directory or one file) and the manifest URL, and
// watches the API server for the pods bound to this node; it sends the
// pod-manager one PodUpdate per source whenever that source's set of
// pods changes, as upstream's file, URL and API server pod sources do.
//
// The reading happens in goroutines that the actor starts when it starts and
// cancels when it restarts or stops; they hand their results to the actor as
// messages.SourceScanned, so that the actor's mailbox never waits on a disk
// or a server, and every PodUpdate is sent by the actor itself.
package configsource

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "config-source"

// DefaultCheckFrequency is the rescan period when Params gives none, as
// upstream's fileCheckFrequency and httpCheckFrequency defaults.
const DefaultCheckFrequency = 20 * time.Second

// Params configures the config-source actor.
type Params struct {
	// StaticPodPath is a directory of manifests or one manifest file; ""
	// disables the file source.
	StaticPodPath      string
	FileCheckFrequency time.Duration
	// ManifestURL serves one Pod or a PodList; "" disables the URL source.
	ManifestURL        string
	ManifestURLHeader  map[string][]string
	HTTPCheckFrequency time.Duration
	// Kube is the API server client; nil (standalone mode) disables the
	// API server source.
	Kube kubernetes.Interface
	// NodeName is this node's name: static pods are named after it, and the
	// API server source watches the pods bound to it.
	NodeName string
	// UserNamespacesHostNetwork is the UserNamespacesHostNetworkSupport
	// gate: a static pod with hostUsers: false may have hostNetwork.
	UserNamespacesHostNetwork bool
	// PodManager receives the PodUpdates.
	PodManager *actor.PID
	// Events, when set, records the events on pods left out (duplicates).
	Events record.EventRecorder
	Log    zerolog.Logger
}

// Actor is the config-source actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger

	// cancel and readers stop the reader goroutines of this incarnation.
	cancel  context.CancelFunc
	readers sync.WaitGroup

	// sent is, per source, the signature of the last set sent; a source
	// missing from it has sent nothing yet, so its first set always goes.
	sent map[string]string
	// last is, per source, the pods last sent, for ResendPods.
	last map[string][]*v1.Pod
	// logged is, per location, the version of the error last logged, so
	// that an invalid manifest is reported once per change, not per rescan.
	logged map[string]string
}

// New returns a producer of config-source actors.
func New(p Params) actor.Producer {
	if p.FileCheckFrequency <= 0 {
		p.FileCheckFrequency = DefaultCheckFrequency
	}
	if p.HTTPCheckFrequency <= 0 {
		p.HTTPCheckFrequency = DefaultCheckFrequency
	}
	return func() actor.Actor {
		return &Actor{
			p:      p,
			log:    p.Log.With().Str("actor", Kind).Logger(),
			sent:   map[string]string{},
			last:   map[string][]*v1.Pod{},
			logged: map[string]string{},
		}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.startReaders(ctx.ActorSystem(), ctx.Self())
		a.log.Debug().Str("path", ctx.Self().Id).Msg("started")
	case *actor.Restarting, *actor.Stopping:
		a.stopReaders()
	case *actor.Stopped:
		a.log.Debug().Str("path", ctx.Self().Id).Msg("stopped")
	case *messages.ResendPods:
		for source, pods := range a.last {
			supervision.Tell(ctx, a.p.PodManager, &messages.PodUpdate{Source: source, Pods: pods})
		}
	case *messages.SourceScanned:
		if m.Source == messages.SourceAPI {
			a.apiListed(ctx, m)
		} else {
			a.scanned(ctx, m)
		}
	}
}

func (a *Actor) startReaders(system *actor.ActorSystem, self *actor.PID) {
	rctx, cancel := context.WithCancel(a.Context())
	a.cancel = cancel
	send := func(m *messages.SourceScanned) { supervision.TellFromOutside(system, self, m) }
	if a.p.StaticPodPath != "" {
		fs := newFileSource(a.p.StaticPodPath, a.p.NodeName, a.p.FileCheckFrequency, send, a.log)
		fs.usernsHostNetwork = a.p.UserNamespacesHostNetwork
		a.readers.Go(func() { fs.run(rctx) })
	}
	if a.p.ManifestURL != "" {
		us := newURLSource(a.p.ManifestURL, http.Header(a.p.ManifestURLHeader), a.p.NodeName, a.p.HTTPCheckFrequency, send)
		us.usernsHostNetwork = a.p.UserNamespacesHostNetwork
		a.readers.Go(func() { us.run(rctx) })
	}
	if a.p.Kube != nil {
		as := newAPISource(a.p.Kube, a.p.NodeName, send, a.log)
		a.readers.Go(func() { as.run(rctx) })
	}
}

// stopReaders cancels the readers and waits for them, so that a restarted
// actor never runs two sets of them; they give up promptly on cancel (an
// HTTP request is cancelled with its context).
func (a *Actor) stopReaders() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.readers.Wait()
	a.cancel = nil
}

func (a *Actor) scanned(ctx actor.Context, m *messages.SourceScanned) {
	a.logInvalid(m)
	if m.Failed {
		return
	}
	sig := signature(m.Pods)
	if last, ok := a.sent[m.Source]; ok && last == sig {
		return
	}
	a.sent[m.Source] = sig
	a.log.Info().Str("source", m.Source).Int("pods", len(m.Pods)).Msg("static pods changed")
	a.send(ctx, m.Source, m.Pods)
}

// send hands a source's whole set to the pod-manager and keeps it for
// ResendPods.
func (a *Actor) send(ctx actor.Context, source string, pods []*v1.Pod) {
	a.last[source] = pods
	supervision.Tell(ctx, a.p.PodManager, &messages.PodUpdate{Source: source, Pods: pods})
}

// logInvalid logs each error whose location or content is new, and forgets
// the locations of this source that are valid again.
func (a *Actor) logInvalid(m *messages.SourceScanned) {
	current := map[string]bool{}
	for _, e := range m.Invalid {
		current[e.Location] = true
		version := e.Version + "\x00" + e.Reason
		if last, ok := a.logged[e.Location]; ok && last == version {
			continue
		}
		a.logged[e.Location] = version
		a.log.Warn().Str("source", m.Source).Str("location", e.Location).Str("reason", e.Reason).
			Msg("static pod manifest left out")
		if e.Pod != nil && a.p.Events != nil {
			// Upstream's event for a duplicate pod name, naming the files.
			a.p.Events.Eventf(e.Pod, v1.EventTypeWarning, events.FailedValidation,
				"Error validating pod %s_%s(%s) from %s %s due to duplicate pod name %q, ignoring: %s declares it already",
				e.Pod.Name, e.Pod.Namespace, e.Pod.UID, m.Source, e.Location, e.Pod.Name, e.DuplicateOf)
		}
	}
	for loc := range a.logged {
		if !current[loc] && a.owns(m.Source, loc) {
			delete(a.logged, loc)
			a.log.Info().Str("source", m.Source).Str("location", loc).Msg("static pod manifest error cleared")
		}
	}
}

// owns tells whether a logged location belongs to source: the URL is the
// http source's, every other location is the file source's.
func (a *Actor) owns(source, location string) bool {
	return (location == a.p.ManifestURL) == (source == messages.SourceHTTP)
}

// signature identifies a set of pods by UID and content, whatever the order
// and the seen times: equal signatures mean nothing to tell the pod-manager.
func signature(pods []*v1.Pod) string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = string(p.UID) + "=" + manifest.ContentHash(p)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
