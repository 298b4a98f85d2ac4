//go:build race

package segments

// raceEnabled scales the heaviest property tests down under the race
// detector, which slows them about tenfold.
const raceEnabled = true
