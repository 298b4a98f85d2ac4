// Command ds-natsd runs the NATS JetStream server for ds collect, which
// starts it as its child beside the ds executable or on $PATH; it is a
// program of its own so that ds does not link nats-server (issue 23 item
// 4). Its protocol is described in package natsd (pkg/natsd, and
// ARCHITECTURE.md §1); the man page ds-collect(1) describes it for users.
//
//	ds-natsd --listen HOST:PORT --store DIR [--name NAME] [--sync]
package main

import (
	"os"

	"github.com/ds-telemetry/ds/pkg/natsd"
)

func main() {
	os.Exit(natsd.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
