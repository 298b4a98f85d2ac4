package main

import (
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/urfave/cli/v3"

	"github.com/ds-telemetry/ds/pkg/fleet"
)

// The NATS connection flags every command that reaches a server takes
// (producers' -o nats://…, ds ingest, the views, ds nats, ds collect), and
// connecting with them. Credentials are never printed: a target is shown
// by its Display form, without the URL's user information.

const natsCategory = "NATS (for nats:// outputs and inputs)"

// natsFlags are the credential and TLS flags of a NATS connection.
func natsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "nats-creds", Category: natsCategory, Usage: "authenticate with the NATS credentials `FILE` (JWT and NKey seed)", Sources: cli.EnvVars("DS_NATS_CREDS"), TakesFile: true},
		&cli.StringFlag{Name: "nats-token", Category: natsCategory, Usage: "authenticate with `TOKEN` (better: set $DS_NATS_TOKEN, which ps does not show)", Sources: cli.EnvVars("DS_NATS_TOKEN")},
		&cli.StringFlag{Name: "nats-tls-ca", Category: natsCategory, Usage: "trust the CA certificates in PEM `FILE` for the server's certificate", TakesFile: true},
		&cli.StringFlag{Name: "nats-tls-cert", Category: natsCategory, Usage: "present the client certificate in PEM `FILE` (with --nats-tls-key)", TakesFile: true},
		&cli.StringFlag{Name: "nats-tls-key", Category: natsCategory, Usage: "the client certificate's private key, PEM `FILE`", TakesFile: true},
	}
}

// natsAuthFrom reads natsFlags from c.
func natsAuthFrom(c *cli.Command) (fleet.Auth, error) {
	a := fleet.Auth{
		CredsFile: c.String("nats-creds"), Token: c.String("nats-token"),
		TLSCA: c.String("nats-tls-ca"), TLSCert: c.String("nats-tls-cert"), TLSKey: c.String("nats-tls-key"),
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return a, usagef("%s: --nats-tls-cert and --nats-tls-key go together", c.Name)
	}
	return a, nil
}

// dialNATS connects to the target named by url for command name
// (fleet.Dial): a URL that does not parse is a usage error (exit 2). With
// retry (a producer), a server that does not answer is not an error: the
// connection keeps trying in the background, and warn is told once.
// Without it, an unreachable server is an error naming the target.
func dialNATS(url string, auth fleet.Auth, name string, retry bool, warn io.Writer) (*nats.Conn, fleet.Target, error) {
	t, err := fleet.ParseTarget(url)
	if err != nil {
		return nil, t, usagef("%v", err)
	}
	nc, err := fleet.Dial(t, auth, fleet.DialOptions{Name: name, Retry: retry, Warn: func(err error) {
		fmt.Fprintf(warn, "ds: warning: %v; trying again in the background (what cannot wait for it is lost to that output and recorded)\n", err)
	}})
	return nc, t, err
}
