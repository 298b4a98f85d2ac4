//go:build !unix

package segments

import "time"

// processCPU returns 0: the process's CPU time is not measured here.
func processCPU() time.Duration { return 0 }
