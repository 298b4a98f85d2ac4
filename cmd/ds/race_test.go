//go:build race

package main

// raceEnabled scales the heaviest trials down under the race detector,
// which slows them several fold; make test runs them whole without it.
const raceEnabled = true
