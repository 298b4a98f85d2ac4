package hostprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func gpuF(v float64) *float64 { return &v }
func gpuI(v int) *int         { return &v }

func TestGPUQueryFields(t *testing.T) {
	// The parsers read the free-text column at index 2 and the numbers
	// after it; the query constants must say the same.
	if len(gpuFields) != 9 || gpuFields[0] != "index" || gpuFields[1] != "uuid" || gpuFields[2] != "name" {
		t.Errorf("GPUQueryFields = %q", GPUQueryFields)
	}
	if len(gpuProcFields) != 4 || gpuProcFields[0] != "gpu_uuid" || gpuProcFields[1] != "pid" || gpuProcFields[2] != "process_name" {
		t.Errorf("GPUProcessQueryFields = %q", GPUProcessQueryFields)
	}
}

func TestParseGPUs(t *testing.T) {
	rtx := GPU{UUID: "GPU-abc", Index: gpuI(0), Name: "NVIDIA RTX 4090", MemoryUsedMiB: gpuF(8120), MemoryTotalMiB: gpuF(24564),
		UtilPct: gpuF(73), MemUtilPct: gpuF(41), TempC: gpuF(61), PowerW: gpuF(212.4)}
	tests := []struct {
		name     string
		in       string
		want     []GPU
		problems []string // substrings of the *RowsError's problems, in order
	}{
		{name: "conformance 5.5", in: "0, GPU-abc, NVIDIA RTX 4090, 8120, 24564, 73, 41, 61, 212.40\n", want: []GPU{rtx}},
		{
			name: "conformance 5.5 placeholders",
			in:   "0, GPU-abc, NVIDIA Test, N/A, [Not Supported], 0, 0, N/A, [Not Supported]\n",
			want: []GPU{{UUID: "GPU-abc", Index: gpuI(0), Name: "NVIDIA Test", UtilPct: gpuF(0), MemUtilPct: gpuF(0)}},
		},
		{
			name: "[N/A] likewise, and another GPU kept whole",
			in:   "0, GPU-abc, NVIDIA Test, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n0, GPU-xyz, NVIDIA RTX 4090, 8120, 24564, 73, 41, 61, 212.40\n",
			want: []GPU{{UUID: "GPU-abc", Index: gpuI(0), Name: "NVIDIA Test"}, {UUID: "GPU-xyz", Index: gpuI(0), Name: "NVIDIA RTX 4090", MemoryUsedMiB: gpuF(8120), MemoryTotalMiB: gpuF(24564), UtilPct: gpuF(73), MemUtilPct: gpuF(41), TempC: gpuF(61), PowerW: gpuF(212.4)}},
		},
		{
			name: "commas in the name do not shift columns",
			in:   "1, GPU-bbb, NVIDIA H100, PCIe, rev 2, 100, 81559, 0, 0, 34, 70.12\n",
			want: []GPU{{UUID: "GPU-bbb", Index: gpuI(1), Name: "NVIDIA H100, PCIe, rev 2", MemoryUsedMiB: gpuF(100), MemoryTotalMiB: gpuF(81559), UtilPct: gpuF(0), MemUtilPct: gpuF(0), TempC: gpuF(34), PowerW: gpuF(70.12)}},
		},
		{
			name: "quotes are text: nvidia-smi never quotes",
			in:   `1, GPU-bbb, "NVIDIA H100, PCIe", 100, 81559, 0, 0, 34, 70.12` + "\n",
			want: []GPU{{UUID: "GPU-bbb", Index: gpuI(1), Name: `"NVIDIA H100, PCIe"`, MemoryUsedMiB: gpuF(100), MemoryTotalMiB: gpuF(81559), UtilPct: gpuF(0), MemUtilPct: gpuF(0), TempC: gpuF(34), PowerW: gpuF(70.12)}},
		},
		{
			name: "a name opening a quote never hides the next rows",
			in:   "0, GPU-a, \"Odd, 1, 2, 3, 4, 5, 6\n1, GPU-b, B, 1, 2, 3, 4, 5, 6\n",
			want: []GPU{
				{UUID: "GPU-a", Index: gpuI(0), Name: `"Odd`, MemoryUsedMiB: gpuF(1), MemoryTotalMiB: gpuF(2), UtilPct: gpuF(3), MemUtilPct: gpuF(4), TempC: gpuF(5), PowerW: gpuF(6)},
				{UUID: "GPU-b", Index: gpuI(1), Name: "B", MemoryUsedMiB: gpuF(1), MemoryTotalMiB: gpuF(2), UtilPct: gpuF(3), MemUtilPct: gpuF(4), TempC: gpuF(5), PowerW: gpuF(6)},
			},
		},
		{
			name: "spaces trimmed, CRLF, blank lines, no final newline",
			in:   "\r\n   \n0 ,  GPU-abc ,  NVIDIA RTX 4090  , 8120 , 24564, 73, 41, 61 , 212.40  \r\n\n",
			want: []GPU{rtx},
		},
		{name: "empty output: no GPUs", in: "", want: []GPU{}},
		{
			name:     "a bad number: that field null, the GPU kept",
			in:       "0, GPU-abc, NVIDIA RTX 4090, 8120, 24564, 73, 41, hot, 212.40\n",
			want:     []GPU{{UUID: "GPU-abc", Index: gpuI(0), Name: "NVIDIA RTX 4090", MemoryUsedMiB: gpuF(8120), MemoryTotalMiB: gpuF(24564), UtilPct: gpuF(73), MemUtilPct: gpuF(41), PowerW: gpuF(212.4)}},
			problems: []string{`line 1: temperature.gpu: not a number: "hot"`},
		},
		{
			name:     "NaN and Inf are not numbers JSON can hold",
			in:       "0, GPU-abc, X, NaN, Inf, -Inf, 1, 2, 3\n",
			want:     []GPU{{UUID: "GPU-abc", Index: gpuI(0), Name: "X", MemUtilPct: gpuF(1), TempC: gpuF(2), PowerW: gpuF(3)}},
			problems: []string{"memory.used", "memory.total", "utilization.gpu"},
		},
		{
			name:     "a lost GPU's placeholder is null with a problem",
			in:       "2, GPU-ghi, NVIDIA Lost, [GPU is lost], 1000, 5, 5, 40, 50\n",
			want:     []GPU{{UUID: "GPU-ghi", Index: gpuI(2), Name: "NVIDIA Lost", MemoryTotalMiB: gpuF(1000), UtilPct: gpuF(5), MemUtilPct: gpuF(5), TempC: gpuF(40), PowerW: gpuF(50)}},
			problems: []string{"line 1: memory.used: [GPU is lost]"},
		},
		{
			name:     "too few fields: read from the left, the rest null",
			in:       "0, GPU-abc, NVIDIA RTX 4090, 8120, 24564\n",
			want:     []GPU{{UUID: "GPU-abc", Index: gpuI(0), Name: "NVIDIA RTX 4090", MemoryUsedMiB: gpuF(8120), MemoryTotalMiB: gpuF(24564)}},
			problems: []string{"line 1: 5 fields, want 9"},
		},
		{
			name:     "index placeholder or garbage",
			in:       "N/A, GPU-a, A, 1, 2, 3, 4, 5, 6\nzero, GPU-b, B, 1, 2, 3, 4, 5, 6\n",
			want:     []GPU{{UUID: "GPU-a", Name: "A", MemoryUsedMiB: gpuF(1), MemoryTotalMiB: gpuF(2), UtilPct: gpuF(3), MemUtilPct: gpuF(4), TempC: gpuF(5), PowerW: gpuF(6)}, {UUID: "GPU-b", Name: "B", MemoryUsedMiB: gpuF(1), MemoryTotalMiB: gpuF(2), UtilPct: gpuF(3), MemUtilPct: gpuF(4), TempC: gpuF(5), PowerW: gpuF(6)}},
			problems: []string{`line 2: index: not an integer: "zero"`},
		},
		{
			name:     "rows without a uuid, or repeating one, are left out and said",
			in:       "garbage\n0, [N/A], X, 1, 2, 3, 4, 5, 6\n0, GPU-abc, NVIDIA RTX 4090, 8120, 24564, 73, 41, 61, 212.40\n1, GPU-abc, again, 1, 2, 3, 4, 5, 6\n",
			want:     []GPU{rtx},
			problems: []string{"line 1: no uuid", "line 2: no uuid", "line 4: uuid GPU-abc repeated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGPUs(strings.NewReader(tt.in))
			checkRowsError(t, err, "--query-gpu", tt.problems)
			if !reflect.DeepEqual(got, tt.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

// checkRowsError checks that err is nil when problems is, and otherwise a
// *RowsError of query whose problems contain each of problems in order.
func checkRowsError(t *testing.T, err error, query string, problems []string) {
	t.Helper()
	if problems == nil {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	var re *RowsError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *RowsError", err)
	}
	if re.Query != query || len(re.Problems) != len(problems) {
		t.Fatalf("RowsError %q %q, want %s and %d problems", re.Query, re.Problems, query, len(problems))
	}
	for i, p := range problems {
		if !strings.Contains(re.Problems[i], p) {
			t.Errorf("problem %d = %q, want it to contain %q", i, re.Problems[i], p)
		}
	}
	if !strings.HasPrefix(err.Error(), "nvidia-smi "+query+": ") {
		t.Errorf("error text %q", err)
	}
}

func TestRowsErrorBounded(t *testing.T) {
	_, err := ParseGPUs(strings.NewReader(strings.Repeat("x\n", 20)))
	var re *RowsError
	if !errors.As(err, &re) || len(re.Problems) != maxRowProblems || re.Omitted != 20-maxRowProblems {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasSuffix(err.Error(), "; and 12 more") {
		t.Errorf("error text %q", err)
	}
}

func TestParseGPUProcesses(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []GPUProcess
		problems []string
	}{
		{
			name: "two processes",
			in:   "GPU-abc, 4242, /usr/bin/python3, 8000\nGPU-bbb, 4343, trainer, 12.5\n",
			want: []GPUProcess{{GPUUUID: "GPU-abc", PID: 4242, Name: "/usr/bin/python3", UsedMemoryMiB: gpuF(8000)}, {GPUUUID: "GPU-bbb", PID: 4343, Name: "trainer", UsedMemoryMiB: gpuF(12.5)}},
		},
		{
			name: "placeholders in used_memory are null",
			in:   "GPU-abc, 77, [Not Found], [N/A]\nGPU-abc, 78, w, N/A\nGPU-abc, 79, w, [Not Supported]\n",
			want: []GPUProcess{{GPUUUID: "GPU-abc", PID: 77, Name: "[Not Found]"}, {GPUUUID: "GPU-abc", PID: 78, Name: "w"}, {GPUUUID: "GPU-abc", PID: 79, Name: "w"}},
		},
		{
			name: "a name with commas",
			in:   "GPU-bbb, 4343, /opt/train, v2, --lr=1, 100\n",
			want: []GPUProcess{{GPUUUID: "GPU-bbb", PID: 4343, Name: "/opt/train, v2, --lr=1", UsedMemoryMiB: gpuF(100)}},
		},
		{
			// Process names are the user's: a leading quote, quotes and
			// commas, a lone quote; each line is still one row.
			name: "quoted names never hide the next rows",
			in:   "GPU-abc, 100, \"weird, 10\nGPU-abc, 101, \"x, y\", z, 20\nGPU-abc, 102, a\"b, 30\nGPU-bbb, 103, \", 40\nGPU-bbb, 104, python3, 50\n",
			want: []GPUProcess{
				{GPUUUID: "GPU-abc", PID: 100, Name: `"weird`, UsedMemoryMiB: gpuF(10)},
				{GPUUUID: "GPU-abc", PID: 101, Name: `"x, y", z`, UsedMemoryMiB: gpuF(20)},
				{GPUUUID: "GPU-abc", PID: 102, Name: `a"b`, UsedMemoryMiB: gpuF(30)},
				{GPUUUID: "GPU-bbb", PID: 103, Name: `"`, UsedMemoryMiB: gpuF(40)},
				{GPUUUID: "GPU-bbb", PID: 104, Name: "python3", UsedMemoryMiB: gpuF(50)},
			},
		},
		{name: "no processes", in: "", want: []GPUProcess{}},
		{
			name:     "bad memory kept null; no pid or uuid left out",
			in:       "GPU-abc, 1, a, lots\nGPU-abc, x, b, 1\n, 3, c, 1\nGPU-abc\nGPU-abc, 5, e\n",
			want:     []GPUProcess{{GPUUUID: "GPU-abc", PID: 1, Name: "a"}, {GPUUUID: "GPU-abc", PID: 5, Name: "e"}},
			problems: []string{`line 1: used_memory: not a number: "lots"`, "line 2: pid: not an integer", "line 3: no gpu_uuid", "line 4: no pid", "line 5: 3 fields, want 4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGPUProcesses(strings.NewReader(tt.in))
			checkRowsError(t, err, "--query-compute-apps", tt.problems)
			if !reflect.DeepEqual(got, tt.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

func TestParseGPUsReadError(t *testing.T) {
	if g, err := ParseGPUs(netErrReader{}); err == nil || g != nil || errors.As(err, new(*RowsError)) {
		t.Errorf("got %v, %v; want the reader's error and no GPUs", g, err)
	}
	if p, err := ParseGPUProcesses(netErrReader{}); err == nil || p != nil {
		t.Errorf("got %v, %v; want the reader's error", p, err)
	}
	big := strings.Repeat("GPU-abc, 1, a, 1\n", maxProcFile/17+1)
	if p, err := ParseGPUProcesses(strings.NewReader(big)); !errors.Is(err, errTooLarge) || p != nil {
		t.Errorf("%d MiB: got %d processes, %v; want the 16 MiB bound", len(big)>>20, len(p), err)
	}
}

// fakeSMI returns the path of the fake nvidia-smi testdata/nvidia-smi/<name>,
// made executable should a copy have lost the bit.
func fakeSMI(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "nvidia-smi", name, "nvidia-smi"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil {
		t.Fatal(err)
	} else if fi.Mode()&0o111 != 0o111 {
		os.Chmod(p, 0o755)
	}
	return p
}

// smiRuns sets $FAKE_SMI_LOG and returns a function giving the runs the
// fake nvidia-smi logged so far, one "pid args" line each.
func smiRuns(t *testing.T) func() []string {
	log := filepath.Join(t.TempDir(), "runs")
	t.Setenv("FAKE_SMI_LOG", log)
	return func() []string {
		b, _ := os.ReadFile(log)
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
	}
}

func TestReadGPUGood(t *testing.T) {
	runs := smiRuns(t)
	p := &Prober{NvidiaSMI: fakeSMI(t, "good")}
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Schema != SchemaGPU || !rec.Available || rec.IntervalMS != nil || rec.SampleUnixMS != netT0.UnixMilli() || rec.Error != "" || rec.ParseError != "" || rec.ProcessesError != "" {
		t.Errorf("head: %+v", rec)
	}
	if rec.DurationMS <= 0 {
		t.Errorf("duration_ms = %v", rec.DurationMS)
	}
	// Sorted by index: GPU-abc (0) before GPU-bbb (1), listed the other way.
	if len(rec.GPUs) != 2 || rec.GPUs[0].UUID != "GPU-abc" || rec.GPUs[1].UUID != "GPU-bbb" {
		t.Fatalf("gpus %+v", rec.GPUs)
	}
	if g := rec.GPUs[1]; g.Name != "NVIDIA H100 80GB HBM3, PCIe" || *g.MemoryUsedMiB != 100 || *g.PowerW != 70.12 {
		t.Errorf("comma-named GPU %+v", g)
	}
	want := []GPUProcess{{GPUUUID: "GPU-abc", PID: 4242, Name: "/usr/bin/python3", UsedMemoryMiB: gpuF(8000)}, {GPUUUID: "GPU-bbb", PID: 4343, Name: "/opt/train, v2"}}
	if !reflect.DeepEqual(rec.Processes, want) {
		t.Errorf("processes %+v", rec.Processes)
	}
	if r := runs(); len(r) != 2 || !strings.Contains(r[0], "--query-gpu=") || !strings.Contains(r[1], "--query-compute-apps=") {
		t.Errorf("runs %q, want the GPU query then the compute-apps query", r)
	}
	rec, err = p.ReadGPU(context.Background(), netT0.Add(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec.IntervalMS == nil || *rec.IntervalMS != 1500 {
		t.Errorf("second read: interval_ms %v, want 1500", rec.IntervalMS)
	}
}

func TestReadGPUPlaceholders(t *testing.T) {
	p := &Prober{NvidiaSMI: fakeSMI(t, "placeholders")}
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(rec.GPUs)
	want := `[{"uuid":"GPU-abc","index":0,"name":"NVIDIA Test","memory_used_mib":null,"memory_total_mib":null,"utilization_gpu_percent":0,"utilization_memory_percent":0,"temperature_c":null,"power_w":null},` +
		`{"uuid":"GPU-def","index":1,"name":"NVIDIA Test","memory_used_mib":null,"memory_total_mib":null,"utilization_gpu_percent":null,"utilization_memory_percent":null,"temperature_c":45,"power_w":100.5},` +
		`{"uuid":"GPU-ghi","index":2,"name":"NVIDIA Lost","memory_used_mib":null,"memory_total_mib":1000,"utilization_gpu_percent":5,"utilization_memory_percent":5,"temperature_c":40,"power_w":50}]`
	if string(got) != want {
		t.Errorf("gpus\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(rec.ParseError, "line 3: memory.used: [GPU is lost]") || strings.Contains(rec.ParseError, "N/A") {
		t.Errorf("parse_error %q, want the lost GPU only", rec.ParseError)
	}
	if len(rec.Processes) != 2 || rec.Processes[0].UsedMemoryMiB != nil || rec.Processes[1].UsedMemoryMiB != nil {
		t.Errorf("processes %+v", rec.Processes)
	}
}

func TestReadGPUNoGPUs(t *testing.T) {
	runs := smiRuns(t)
	p := &Prober{NvidiaSMI: fakeSMI(t, "empty")}
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(rec); !bytes.Contains(b, []byte(`"gpus":[],"processes":[]`)) {
		t.Errorf("record %s, want empty lists", b)
	}
	if r := runs(); len(r) != 1 {
		t.Errorf("runs %q, want only the GPU query", r)
	}
}

func TestReadGPUNotFound(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, p *Prober){
		"path does not exist": func(t *testing.T, p *Prober) {
			p.NvidiaSMI = filepath.Join(t.TempDir(), "nvidia-smi")
		},
		"empty PATH dir": func(t *testing.T, p *Prober) {
			t.Setenv("PATH", t.TempDir())
		},
		"empty PATH": func(t *testing.T, p *Prober) {
			t.Setenv("PATH", "")
			p.NvidiaSMI = "nvidia-smi"
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := &Prober{}
			setup(t, p)
			start := time.Now()
			rec, err := p.ReadGPU(context.Background(), netT0)
			if !errors.Is(err, ErrNoGPU) || rec != nil {
				t.Fatalf("got %v, %v; want ErrNoGPU", rec, err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestReadGPUViaPATH(t *testing.T) {
	t.Setenv("PATH", filepath.Dir(fakeSMI(t, "good")))
	p := &Prober{} // NvidiaSMI "": DefaultNvidiaSMI, looked up in PATH
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.GPUs) != 2 || len(rec.Processes) != 2 {
		t.Errorf("record %+v", rec)
	}
}

func TestReadGPUNotExecutable(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Prober{NvidiaSMI: bin}
	if _, err := p.ReadGPU(context.Background(), netT0); err == nil || errors.Is(err, ErrNoGPU) {
		t.Errorf("err = %v, want a real error, not ErrNoGPU", err)
	}
}

func TestReadGPUFail(t *testing.T) {
	p := &Prober{NvidiaSMI: fakeSMI(t, "fail")}
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err == nil || rec != nil || errors.Is(err, ErrNoGPU) {
		t.Fatalf("got %v, %v; want an error that is not ErrNoGPU", rec, err)
	}
	want := "nvidia-smi --query-gpu: exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it to start %q", err, want)
	}
}

func TestReadGPUProcessesFail(t *testing.T) {
	p := &Prober{NvidiaSMI: fakeSMI(t, "appsfail")}
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.GPUs) != 1 || rec.Processes != nil {
		t.Errorf("gpus %+v processes %+v; want the GPU and null processes", rec.GPUs, rec.Processes)
	}
	if want := "nvidia-smi --query-compute-apps: exit status 3: Failed to query compute apps: Unknown Error"; rec.ProcessesError != want {
		t.Errorf("processes_error %q, want %q", rec.ProcessesError, want)
	}
	if b, _ := json.Marshal(rec); !bytes.Contains(b, []byte(`"processes":null,"processes_error":`)) {
		t.Errorf("record %s", b)
	}
}

// readPIDs reads the pids a fake nvidia-smi wrote to file, waiting up to
// 20 s for them (a loaded machine).
func readPIDs(t *testing.T, file string) []int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			var pids []int
			for _, s := range f {
				pid, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("pid file %q", b)
				}
				pids = append(pids, pid)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pids in %s", file)
		}
	}
}

// waitGone waits up to 20 s for pid to be gone: no such process, or a
// zombie waiting for an init that may never reap it (in a container).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && bytes.HasPrefix(b[i:], []byte(") Z")) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d still running", pid)
			return
		}
	}
}

// smiStart is an nvidia-smi run as gpuState.started tells of it.
type smiStart struct {
	query    string
	pid      int
	deadline time.Time
}

// recordStarts makes p keep the nvidia-smi runs it starts, and returns
// the function that gives them.
func recordStarts(p *Prober) func() []smiStart {
	var mu sync.Mutex
	var runs []smiStart
	p.gpu.started = func(query string, pid int, deadline time.Time) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, smiStart{query, pid, deadline})
	}
	return func() []smiStart {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs)
	}
}

// groupGone waits up to 20 s for every process of process group pgid to
// be gone (or a zombie, see waitGone): a killed nvidia-smi and whatever
// it started, whether or not it had said their pids.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var live []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			i := bytes.LastIndexByte(b, ')')
			if err != nil || i < 0 {
				continue
			}
			// After the command: state, ppid, pgrp.
			if f := strings.Fields(string(b[i+1:])); len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
				live = append(live, e.Name())
			}
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process group %d: processes %v still running", pgid, live)
			return
		}
	}
}

func TestReadGPUHang(t *testing.T) {
	for _, script := range []string{"hang", "hang-trap"} {
		t.Run(script, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			p := &Prober{NvidiaSMI: fakeSMI(t, script), GPUTimeout: timeout}
			starts := recordStarts(p)
			start := time.Now()
			rec, err := p.ReadGPU(context.Background(), netT0)
			d := time.Since(start)
			if rec != nil || err == nil || err.Error() != "nvidia-smi did not answer within 300ms; killed" {
				t.Fatalf("got %v, %v", rec, err)
			}
			if strings.Contains(err.Error(), "not exited") {
				t.Errorf("err = %v: it should have been reaped", err)
			}
			// About timeout: well below the minute the script sleeps.
			if d < timeout || d > timeout+10*time.Second {
				t.Errorf("returned after %v, want about %v", d, timeout)
			}
			// Killed with its group: the script and its child (whether
			// or not it got to say their pids before the kill).
			runs := starts()
			if len(runs) != 1 {
				t.Fatalf("runs %+v, want one", runs)
			}
			groupGone(t, runs[0].pid)
			if p.gpu.unreaped != nil {
				t.Error("a reaped run is still waited for")
			}
		})
	}
}

// TestReadGPUOneDeadline checks that a sample's two runs share one
// deadline: the compute-apps run gets what the GPU query left, so a
// sample costs GPUTimeout at most, not twice that.
func TestReadGPUOneDeadline(t *testing.T) {
	t.Parallel()
	// The GPU query takes 500 ms of it (more on a loaded machine, not
	// all of it).
	const timeout = 5 * time.Second
	p := &Prober{NvidiaSMI: fakeSMI(t, "slow-apps"), GPUTimeout: timeout}
	starts := recordStarts(p)
	start := time.Now()
	rec, err := p.ReadGPU(context.Background(), netT0)
	d := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Both runs were started under the one deadline, timeout after the
	// sample began (the second had what the first left).
	runs := starts()
	if len(runs) != 2 || runs[0].query != "--query-gpu" || runs[1].query != "--query-compute-apps" {
		t.Fatalf("runs %+v, want the GPU query then the compute-apps query", runs)
	}
	if !runs[1].deadline.Equal(runs[0].deadline) || runs[0].deadline.Before(start.Add(timeout)) || runs[0].deadline.After(start.Add(timeout+time.Second)) {
		t.Errorf("deadlines %v and %v, want both about %v after %v", runs[0].deadline, runs[1].deadline, timeout, start)
	}
	// Killed at that deadline: well before the minute the compute-apps
	// query sleeps.
	if d < timeout || d > timeout+10*time.Second {
		t.Errorf("returned after %v, want about %v", d, timeout)
	}
	if len(rec.GPUs) != 1 || rec.Processes != nil || rec.ProcessesError != "nvidia-smi did not answer within 5s; killed" {
		t.Errorf("gpus %+v processes %+v processes_error %q; want the GPU, null processes and the deadline", rec.GPUs, rec.Processes, rec.ProcessesError)
	}
	groupGone(t, runs[1].pid)
}

// TestRunSMIAfterDeadline checks that a run whose sample's deadline has
// passed is not started.
func TestRunSMIAfterDeadline(t *testing.T) {
	runs := smiRuns(t)
	p := &Prober{}
	dctx, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	<-dctx.Done()
	_, err := p.runSMI(context.Background(), dctx, time.Second, fakeSMI(t, "good"), "--query-compute-apps")
	if want := "nvidia-smi did not answer within 1s; --query-compute-apps not run"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if r := runs(); len(r) != 0 {
		t.Errorf("runs %q, want none", r)
	}
}

func TestReadGPUChildHoldsPipe(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_SMI_PIDFILE", pidfile)
	// Were the child to keep it waiting, it would until the deadline (a
	// minute), then fail.
	p := &Prober{NvidiaSMI: fakeSMI(t, "hang-child"), GPUTimeout: time.Minute}
	p.gpu.waitDelay = 100 * time.Millisecond
	start := time.Now()
	rec, err := p.ReadGPU(context.Background(), netT0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v: the child holding stdout kept it waiting", d)
	}
	if len(rec.GPUs) != 1 || rec.GPUs[0].UUID != "GPU-abc" {
		t.Errorf("gpus %+v", rec.GPUs)
	}
	for _, pid := range readPIDs(t, pidfile) {
		waitGone(t, pid)
	}
}

// TestReadGPUNoPileUp makes a killed nvidia-smi outlive its kill (as one
// stuck in the driver does) and checks that no other is started until it
// is gone.
func TestReadGPUNoPileUp(t *testing.T) {
	runs := smiRuns(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_SMI_PIDFILE", pidfile)
	p := &Prober{NvidiaSMI: fakeSMI(t, "hang"), GPUTimeout: 100 * time.Millisecond}
	p.gpu.killGroup = func(int) error { return nil } // the kill does nothing…
	p.gpu.waitDelay = time.Hour                      // …nor does exec's own, for the test's time
	p.gpu.reapGrace = 50 * time.Millisecond
	start := time.Now()
	_, err := p.ReadGPU(context.Background(), netT0)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 100ms; killed, but it has not exited") {
		t.Fatalf("err = %v", err)
	}
	// About 150 ms: it does not wait for the stuck one (which lives
	// until the test kills it).
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("returned after %v, want about 150ms", d)
	}
	pid := readPIDs(t, pidfile)[0]
	_, err = p.ReadGPU(context.Background(), netT0.Add(time.Second))
	if want := "nvidia-smi (pid " + strconv.Itoa(pid) + ") was killed at its deadline but has not exited yet; not starting another"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	if r := runs(); len(r) != 1 {
		t.Errorf("runs %q, want one", r)
	}
	// The stuck one goes at last (the driver let it go): once it is
	// reaped, the next sample runs nvidia-smi again.
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid)
	select {
	case <-p.gpu.unreaped:
	case <-time.After(20 * time.Second):
		t.Fatal("the killed nvidia-smi was not reaped within 20 s")
	}
	p.NvidiaSMI = fakeSMI(t, "good")
	p.GPUTimeout = time.Minute
	if _, err := p.ReadGPU(context.Background(), netT0.Add(2*time.Second)); err != nil {
		t.Errorf("after the stuck one went: %v", err)
	}
	if r := runs(); len(r) != 3 {
		t.Errorf("runs %q, want three", r)
	}
}

// TestReadGPUCanceled cancels a sample while nvidia-smi hangs (once it
// has said its pid): ReadGPU returns the cancellation at once, and the
// process is gone.
func TestReadGPUCanceled(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_SMI_PIDFILE", pidfile)
	p := &Prober{NvidiaSMI: fakeSMI(t, "hang")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var canceled atomic.Int64 // unix ns of the cancel
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if b, err := os.ReadFile(pidfile); err == nil && len(bytes.TrimSpace(b)) > 0 {
				break
			}
		}
		canceled.Store(time.Now().UnixNano())
		cancel()
	}()
	_, err := p.ReadGPU(ctx, netT0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// At once: well before the minute the script sleeps.
	if d := time.Since(time.Unix(0, canceled.Load())); d > 10*time.Second {
		t.Errorf("took %v after the cancel", d)
	}
	for _, pid := range readPIDs(t, pidfile) {
		waitGone(t, pid)
	}
}

func TestGPURecordGolden(t *testing.T) {
	p := &Prober{NvidiaSMI: fakeSMI(t, "good")}
	if _, err := p.ReadGPU(context.Background(), netT0); err != nil {
		t.Fatal(err)
	}
	rec, err := p.ReadGPU(context.Background(), netT0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rec.Seq = 2
	rec.DurationMS = 12.5 // not reproducible
	netgpuGolden(t, "gpu_record.json", rec)
}

// TestReadGPUReal runs this machine's nvidia-smi, when there is one;
// skipped with -short. It checks that the query fields are ones the
// driver knows, and that every row reads whole.
func TestReadGPUReal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real nvidia-smi")
	}
	p := &Prober{}
	rec, err := p.ReadGPU(context.Background(), time.Now())
	if errors.Is(err, ErrNoGPU) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	t.Logf("%s", b)
	if rec.ParseError != "" || rec.ProcessesError != "" {
		t.Errorf("parse_error %q processes_error %q", rec.ParseError, rec.ProcessesError)
	}
	for _, g := range rec.GPUs {
		if g.Index == nil || g.MemoryTotalMiB == nil || !strings.HasPrefix(g.UUID, "GPU-") && !strings.HasPrefix(g.UUID, "MIG-") {
			t.Errorf("GPU %+v", g)
		}
	}
}

// A name holding "," without a space stays as it is; one holding ", " is
// rejoined as nvidia-smi printed it.
func TestParseGPUNamesKeepCommas(t *testing.T) {
	ps, err := ParseGPUProcesses(strings.NewReader("GPU-abc, 7, python c,d.py, 100\nGPU-abc, 8, import x, y, 200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name != "python c,d.py" || ps[1].Name != "import x, y" {
		t.Errorf("processes = %+v", ps)
	}
}
