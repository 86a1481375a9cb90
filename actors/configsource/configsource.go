// Package configsource holds the config-source actor: it will read pods from their sources (the API server, the static manifest directory, the manifest URL) and send typed pod updates to the pod-manager.
//
// Until then it is a supervised shell that starts and stops in its place in
// the tree, so that supervision, shutdown order and the registry are real.
package configsource

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "config-source"

// Actor is the config-source actor.
type Actor struct {
	log zerolog.Logger
}

// New returns a producer of config-source actors that log to log.
func New(log zerolog.Logger) actor.Producer {
	return func() actor.Actor { return &Actor{log: log.With().Str("actor", Kind).Logger()} }
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.log.Debug().Str("path", ctx.Self().Id).Msg("started")
	case *actor.Stopped:
		a.log.Debug().Str("path", ctx.Self().Id).Msg("stopped")
	}
}
