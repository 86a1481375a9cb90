// Package supervision owns actorlet's use of protoactor-go: how actors are
// built (Props), how they are restarted when they fail (strategies), how
// messages carry their sender (Tell), and the Registry of every live actor
// that the dashboard and /debug endpoints read.
//
// Everything that depends on protoactor-go's sharp edges lives here, so that
// an actor package only writes a Receive function:
//   - protoactor's exponential backoff is linear in nanoseconds: Backoff is ours;
//   - middleware on a Props is not inherited and Configure appends: Props
//     builds a fresh *actor.Props for every spawn;
//   - its OpenTelemetry metrics leak a callback per spawn: they stay off, and
//     the receiver and mailbox middleware here count messages instead;
//   - it cannot list the actor tree: the Registry does, fed by lifecycle
//     messages seen in the receiver middleware.
package supervision
