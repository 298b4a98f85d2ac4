// Command ds is a toolkit of composable Unix-style commands for telemetry
// capture built on the datastream: producers record process output and host
// samples into DSS captures, views print them back. See man/ds.1.
package main

import "os"

// atExit holds what main runs before it exits: nothing in a build for
// users (profile.go, under the dsprofile build tag, stops its CPU
// profile there).
var atExit []func()

func main() {
	code := run(os.Args, os.Stdin, os.Stdout, os.Stderr)
	for _, f := range atExit {
		f()
	}
	os.Exit(code)
}
