package hostprobe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// seedFuzz adds every file matching pattern as a seed.
func seedFuzz(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in %s: %v", pattern, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParseNetDev checks that ParseNetDev never panics, is
// deterministic, and returns only named interfaces.
func FuzzParseNetDev(f *testing.F) {
	seedFuzz(f, "testdata/net/*/net/dev")
	seedFuzz(f, "testdata/net/*/*/net/dev")
	f.Add([]byte(netHeader + "enp0s31f6:18446744073709551615 5 0 0 0 0 0 0 7 8 0 0 0 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, err := ParseNetDev(strings.NewReader(string(b)))
		again, err2 := ParseNetDev(strings.NewReader(string(b)))
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(devs, again) {
			t.Fatalf("not deterministic: %v, %v", err, err2)
		}
		if err != nil && devs != nil {
			t.Fatalf("devices %v with error %v", devs, err)
		}
		for _, d := range devs {
			if d.Name == "" || strings.ContainsAny(d.Name, ": \t\n") {
				t.Fatalf("interface name %q", d.Name)
			}
		}
	})
}

// FuzzParseGPUs checks that ParseGPUs never panics, is deterministic,
// keys every GPU by a uuid, and returns what JSON can hold (no NaN).
func FuzzParseGPUs(f *testing.F) {
	for _, s := range []string{
		"0, GPU-abc, NVIDIA RTX 4090, 8120, 24564, 73, 41, 61, 212.40\n",
		"0, GPU-abc, NVIDIA Test, N/A, [Not Supported], 0, 0, N/A, [Not Supported]\n",
		"1, GPU-bbb, NVIDIA H100, PCIe, 100, 81559, 0, 0, 34, 70.12\n",
		`1, GPU-bbb, "NVIDIA H100, PCIe", 100, NaN, 0, 0, 34, 70.12` + "\n\"unterminated",
		"2, GPU-ghi, NVIDIA Lost, [GPU is lost], 1000, 5, 5, 40, 50\nx\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gpus, err := ParseGPUs(strings.NewReader(string(b)))
		again, err2 := ParseGPUs(strings.NewReader(string(b)))
		if !reflect.DeepEqual(gpus, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("not deterministic: %v, %v", err, err2)
		}
		if gpus == nil {
			t.Fatalf("nil GPUs from a reader that cannot fail (%v)", err)
		}
		seen := map[string]bool{}
		for _, g := range gpus {
			if g.UUID == "" || seen[g.UUID] {
				t.Fatalf("GPU without a uuid, or twice: %+v", g)
			}
			seen[g.UUID] = true
		}
		if _, err := json.Marshal(gpus); err != nil {
			t.Fatalf("cannot encode %+v: %v", gpus, err)
		}
	})
}

// FuzzParseGPUProcesses checks that ParseGPUProcesses never panics, is
// deterministic, returns what JSON can hold, and reads each line as one
// row of its own: the processes of the whole output are those of its
// lines parsed one by one, so that no name (a quote in it, say) can hide
// the rows after it.
func FuzzParseGPUProcesses(f *testing.F) {
	for _, s := range []string{
		"GPU-abc, 4242, /usr/bin/python3, 8000\nGPU-bbb, 4343, /opt/train, v2, [N/A]\n",
		"GPU-abc, 77, [Not Found], [N/A]\n, 3, c, 1\nGPU-abc\n",
		"GPU-abc, 1, a, Inf\n",
		"GPU-abc, 100, \"weird, 10\nGPU-abc, 101, a, 20\nGPU-abc, 102, b, 30\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		procs, err := ParseGPUProcesses(strings.NewReader(string(b)))
		again, err2 := ParseGPUProcesses(strings.NewReader(string(b)))
		if !reflect.DeepEqual(procs, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("not deterministic: %v, %v", err, err2)
		}
		for _, pr := range procs {
			if pr.GPUUUID == "" {
				t.Fatalf("process without a GPU: %+v", pr)
			}
		}
		byLine := []GPUProcess{}
		for _, line := range strings.Split(string(b), "\n") {
			p, _ := ParseGPUProcesses(strings.NewReader(line))
			byLine = append(byLine, p...)
		}
		if !reflect.DeepEqual(procs, byLine) {
			t.Fatalf("whole output gives %+v, line by line %+v", procs, byLine)
		}
		if _, err := json.Marshal(procs); err != nil {
			t.Fatalf("cannot encode %+v: %v", procs, err)
		}
	})
}
