// Package apiserver holds the api-server actor: it will serve the kubelet HTTP API, the health endpoints and the live actor dashboard.
//
// Until then it is a supervised shell that starts and stops in its place in
// the tree, so that supervision, shutdown order and the registry are real.
package apiserver

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "api-server"

// Actor is the api-server actor.
type Actor struct {
	log zerolog.Logger
}

// New returns a producer of api-server actors that log to log.
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
