// Command actorlet is a Kubernetes node agent (a kubelet) built as a tree of
// supervised actors. See README.md and docs/.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/actors/bootstrap"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// shutdownDeadline bounds how long the actor tree may take to stop after
// SIGTERM/SIGINT: a service manager waits for no more.
const shutdownDeadline = 10 * time.Second

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	system := supervision.NewSystem(zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	defer system.Shutdown()
	exit := make(chan int, 1)
	pid, err := bootstrap.Spawn(bootstrap.Params{
		Args: args, Stdout: os.Stdout, Stderr: os.Stderr, System: system, Ctx: ctx,
		Exit: func(code int) { exit <- code },
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "spawn the bootstrap actor: %v\n", err)
		return bootstrap.ExitFailure
	}
	select {
	case code := <-exit:
		return code
	case sig := <-signals:
		// Containers keep running: a node agent's exit is not its pods' end.
		cancel()
		supervision.TellFromOutside(system.ActorSystem, pid, &messages.Shutdown{Signal: sig.String()})
		select {
		case code := <-exit:
			return code
		case <-time.After(shutdownDeadline):
			fmt.Fprintf(os.Stderr, "shutdown: the actor tree did not stop within %s; exiting\n", shutdownDeadline)
			return bootstrap.ExitFailure
		case sig := <-signals:
			fmt.Fprintf(os.Stderr, "shutdown: second signal %s; exiting at once\n", sig)
			return bootstrap.ExitFailure
		}
	}
}
