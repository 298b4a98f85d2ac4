// Command ds is a toolkit of composable Unix-style commands for telemetry
// capture built on the datastream: producers record process output and host
// samples into DSS captures, views print them back. See man/ds.1.
package main

import "os"

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
