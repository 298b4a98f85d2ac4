package hostprobe

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GPUQueryFields are the --query-gpu fields [Prober.ReadGPU] asks
// nvidia-smi for, in the column order [ParseGPUs] reads. name is the only
// free-text column.
const GPUQueryFields = "index,uuid,name,memory.used,memory.total,utilization.gpu,utilization.memory,temperature.gpu,power.draw"

// GPUProcessQueryFields are the --query-compute-apps fields
// [Prober.ReadGPU] asks nvidia-smi for, in the column order
// [ParseGPUProcesses] reads. process_name is the only free-text column.
const GPUProcessQueryFields = "gpu_uuid,pid,process_name,used_memory"

// gpuFormat is nvidia-smi's output format ReadGPU asks for: CSV without a
// header line or units, fields separated by ", " and never quoted.
const gpuFormat = "--format=csv,noheader,nounits"

var (
	gpuFields     = strings.Split(GPUQueryFields, ",")
	gpuProcFields = strings.Split(GPUProcessQueryFields, ",")
)

// A RowsError reports rows of nvidia-smi output that [ParseGPUs] or
// [ParseGPUProcesses] could read only in part, or not at all. It is not
// fatal: the parse's result is returned with it and holds every row that
// had its key (a GPU's uuid; a process's GPU uuid and pid), with the
// fields that could not be read null. A row without its key is left out
// and named here, so that no GPU vanishes without a word.
type RowsError struct {
	// Query is the query whose output was parsed: "--query-gpu" or
	// "--query-compute-apps".
	Query string
	// Problems are the rows' problems, each "line N: …", at most
	// maxRowProblems (8) of them.
	Problems []string
	// Omitted counts the problems past those in Problems.
	Omitted int
}

// Error gives the query and the problems: "nvidia-smi
// --query-gpu: line 2: temperature.gpu: not a number: \"hot\"; …".
func (e *RowsError) Error() string {
	s := "nvidia-smi " + e.Query + ": " + strings.Join(e.Problems, "; ")
	if e.Omitted > 0 {
		s += fmt.Sprintf("; and %d more", e.Omitted)
	}
	return s
}

// maxRowProblems bounds RowsError.Problems.
const maxRowProblems = 8

func (e *RowsError) add(line int, format string, args ...any) {
	if len(e.Problems) == maxRowProblems {
		e.Omitted++
		return
	}
	e.Problems = append(e.Problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
}

// result returns e as an error when it holds a problem, else nil.
func (e *RowsError) result() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// readGPURows reads nvidia-smi's rows from r (at most 16 MiB), calling
// fn with each row's line number and fields. nvidia-smi's CSV is not
// quoted, whatever a field holds: each line is one row, split at every
// ", " (nvidia-smi's separator), each field trimmed of spaces; a name
// holding ", " arrives as extra fields, which fn rejoins as they were (a
// "," without a space does not split), and a '"' is kept as it is, so a
// name holding one can never hide the rows after it.
// Rows that are empty or only spaces are skipped. An error of r is
// returned.
func readGPURows(r io.Reader, query string, fn func(line int, f []string)) error {
	b, err := readAllLimited(r)
	if err != nil {
		return fmt.Errorf("read nvidia-smi %s output: %w", query, err)
	}
	s := string(b) // one copy: the fields are substrings of it
	var f []string
	for line := 1; len(s) > 0; line++ {
		var row string
		row, s, _ = strings.Cut(s, "\n")
		if strings.TrimSpace(row) == "" {
			continue
		}
		f = f[:0]
		for {
			// nvidia-smi separates fields with ", " exactly: a name
			// holding "," without a space stays whole, and one holding
			// ", " is rejoined with ", " by the caller, as it was.
			field, rest, more := strings.Cut(row, ", ")
			f = append(f, strings.TrimSpace(field))
			if !more {
				break
			}
			row = rest
		}
		fn(line, f)
	}
	return nil
}

// isPlaceholder reports whether s is one of nvidia-smi's quiet
// placeholders for a value it does not have: N/A, [N/A] or
// [Not Supported].
func isPlaceholder(s string) bool {
	return s == "N/A" || s == "[N/A]" || s == "[Not Supported]"
}

// gpuNumber reads one numeric field: a finite number, or null for a
// placeholder. Other bracketed values ("[Unknown Error]", "[GPU is
// lost]") and anything else that is not a number are null with a
// problem.
func gpuNumber(s string) (*float64, string) {
	if isPlaceholder(s) {
		return nil, ""
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v-v != 0 { // v-v != 0: NaN or ±Inf, which JSON cannot hold
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			return nil, s
		}
		return nil, fmt.Sprintf("not a number: %q", clipString(s))
	}
	return &v, ""
}

func clipString(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// freeText rejoins the fields f[from:to] of a free-text column that
// readGPURows split at ", ": it rejoins them with ", ", so the name comes
// back as nvidia-smi printed it.
func freeText(f []string, from, to int) string {
	if to-from == 1 {
		return f[from]
	}
	return strings.Join(f[from:to], ", ")
}

// ParseGPUs parses the output of nvidia-smi --query-gpu=…
// --format=csv,noheader,nounits with the fields of [GPUQueryFields]: one
// row per GPU, "index, uuid, name,
// memory.used (MiB), memory.total (MiB), utilization.gpu (%),
// utilization.memory (%), temperature.gpu (°C), power.draw (W)". Each
// line is one row: nvidia-smi never quotes, so a '"' is text like any
// other. A name holding commas arrives as extra fields and is rejoined,
// the numbers read from the end of the row, so no column shifts
// (ARCHITECTURE.md case 5.5). It returns the GPUs in the output's order; no
// rows gives an empty list.
//
// A field that is N/A, [N/A] or [Not Supported] is null for that field
// only. A field that is neither a number nor such a placeholder, and a
// row with fewer than 9 fields (read from the left), leave the fields
// that cannot be read null and keep the GPU; a row without a uuid, or
// repeating one, is left out. Those problems come back as a *RowsError
// together with the GPUs, which are valid; any other error (an error of
// r, or more than 16 MiB of output) comes with no GPUs.
func ParseGPUs(r io.Reader) ([]GPU, error) {
	gpus := []GPU{}
	rerr := &RowsError{Query: "--query-gpu"}
	err := readGPURows(r, rerr.Query, func(line int, f []string) {
		if len(f) < 2 || f[1] == "" || isPlaceholder(f[1]) {
			rerr.add(line, "no uuid: row left out")
			return
		}
		for i := range gpus {
			if gpus[i].UUID == f[1] {
				rerr.add(line, "uuid %s repeated: row left out", clipString(f[1]))
				return
			}
		}
		g := GPU{UUID: f[1]}
		var nums []string
		if n := len(gpuFields); len(f) >= n {
			g.Name = freeText(f, 2, len(f)-(n-3))
			nums = f[len(f)-(n-3):]
		} else {
			rerr.add(line, "%d fields, want %d: the missing ones are null", len(f), n)
			if len(f) > 2 {
				g.Name = f[2]
				nums = f[3:]
			}
		}
		if !isPlaceholder(f[0]) {
			if i, err := strconv.Atoi(f[0]); err == nil {
				g.Index = &i
			} else {
				rerr.add(line, "index: not an integer: %q", clipString(f[0]))
			}
		}
		dst := [...]**float64{&g.MemoryUsedMiB, &g.MemoryTotalMiB, &g.UtilPct, &g.MemUtilPct, &g.TempC, &g.PowerW}
		for i, s := range nums {
			var prob string
			if *dst[i], prob = gpuNumber(s); prob != "" {
				rerr.add(line, "%s: %s", gpuFields[3+i], prob)
			}
		}
		gpus = append(gpus, g)
	})
	if err != nil {
		return nil, err
	}
	return gpus, rerr.result()
}

// ParseGPUProcesses parses the output of nvidia-smi
// --query-compute-apps=… --format=csv,noheader,nounits with the fields of
// [GPUProcessQueryFields]: one row per compute process on a GPU,
// "gpu_uuid, pid, process_name, used_memory (MiB)". A process name
// (which its user chooses) holding commas or quotes is rejoined or kept,
// as in [ParseGPUs], and never hides the rows after it. It returns the processes
// in the output's order; no rows (no processes) gives an empty list.
//
// A used_memory of N/A, [N/A] or [Not Supported] is null. A row with a
// used_memory that is not a number, or with 3 fields, keeps the process
// with null memory; a row without a GPU uuid or a pid is left out. Those
// problems come back as a *RowsError together with the processes, which
// are valid; any other error (an error of r, or more than 16 MiB of
// output) comes with no processes.
func ParseGPUProcesses(r io.Reader) ([]GPUProcess, error) {
	procs := []GPUProcess{}
	rerr := &RowsError{Query: "--query-compute-apps"}
	err := readGPURows(r, rerr.Query, func(line int, f []string) {
		if f[0] == "" || isPlaceholder(f[0]) {
			rerr.add(line, "no gpu_uuid: row left out")
			return
		}
		if len(f) < 2 {
			rerr.add(line, "no pid: row left out")
			return
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			rerr.add(line, "pid: not an integer: %q: row left out", clipString(f[1]))
			return
		}
		pr := GPUProcess{GPUUUID: f[0], PID: pid}
		switch n := len(gpuProcFields); {
		case len(f) >= n:
			pr.Name = freeText(f, 2, len(f)-1)
			var prob string
			if pr.UsedMemoryMiB, prob = gpuNumber(f[len(f)-1]); prob != "" {
				rerr.add(line, "%s: %s", gpuProcFields[3], prob)
			}
		default:
			rerr.add(line, "%d fields, want %d: the missing ones are null", len(f), n)
			if len(f) > 2 {
				pr.Name = f[2]
			}
		}
		procs = append(procs, pr)
	})
	if err != nil {
		return nil, err
	}
	return procs, rerr.result()
}

// gpuState is ReadGPU's memory between reads.
type gpuState struct {
	prev time.Time // the previous successful read; zero before the first
	// unreaped is closed when the last nvidia-smi killed at its deadline
	// has been reaped; nil when none is waited for. While it is open,
	// ReadGPU starts no other (they would pile up on a stuck driver).
	unreaped    chan struct{}
	unreapedPID int

	// Test seams; zero values mean the defaults.
	killGroup func(pgid int) error // kills a process group: syscall.Kill(-pgid, SIGKILL)
	waitDelay time.Duration        // cmd.WaitDelay: gpuWaitDelay
	reapGrace time.Duration        // gpuReapGrace
	// started, if set, is told of each nvidia-smi started: its query,
	// its pid (that of its process group) and the deadline it runs under.
	started func(query string, pid int, deadline time.Time)
}

const (
	// gpuWaitDelay is how long, after nvidia-smi exited or was killed,
	// ReadGPU waits for its output pipes to close (a grandchild may
	// hold them) before closing them itself.
	gpuWaitDelay = 200 * time.Millisecond
	// gpuReapGrace is how long, after killing an nvidia-smi at its
	// deadline, ReadGPU waits for it to be reaped before giving up on it
	// (a process stuck in the driver, in D state, outlives SIGKILL).
	gpuReapGrace = 500 * time.Millisecond
	// maxSMIOutput bounds what ReadGPU keeps of nvidia-smi's stdout and
	// stderr; the rest is dropped.
	maxSMIOutput = 1 << 20
)

// ReadGPU runs nvidia-smi twice — --query-gpu with [GPUQueryFields], then,
// when there are GPUs, --query-compute-apps with [GPUProcessQueryFields],
// each with --format=csv,noheader,nounits — and returns a host.gpu record:
// Available true, the GPUs sorted by index then uuid (a GPU without an
// index last), their compute processes, DurationMS the time both runs
// took, and an interval since the previous successful read. Rows of the
// output that could be read only in part are in ParseError (see
// [RowsError]); the compute-apps query failing leaves Processes null
// with the reason in ProcessesError.
//
// The sample has one deadline, [Prober.GPUTimeout] after it began, for
// both runs together (the compute-apps run gets what the GPU query left),
// and is bounded by ctx too. An nvidia-smi that does not answer by the
// deadline is killed with its process group (it runs in a group of its
// own): the GPU query's gives an error, "nvidia-smi did not answer
// within 5s; killed", about the timeout after the sample began (plus a
// reap grace of 500 ms at most); the compute-apps query's gives that
// message in ProcessesError, with the GPUs (or "…; --query-compute-apps
// not run" when the GPU query left no time). Should the killed process not
// go away (stuck in the driver), ReadGPU starts no other nvidia-smi, and
// returns an error saying so, until it has.
//
// Errors: nvidia-smi not found (not in PATH, or the configured path does
// not exist) wraps [ErrNoGPU], and no process is started; one that exits
// non-zero gives an error with its exit status and the first line of its
// stderr (or stdout, where nvidia-smi prints "NVIDIA-SMI has failed
// because it couldn't communicate with the NVIDIA driver…"). ReadGPU
// must not be called concurrently with itself; it may run concurrently
// with the other Read methods.
func (p *Prober) ReadGPU(ctx context.Context, now time.Time) (*GPURecord, error) {
	bin, err := p.findSMI()
	if err != nil {
		return nil, err
	}
	st := &p.gpu
	if st.unreaped != nil {
		select {
		case <-st.unreaped:
			st.unreaped = nil
		default:
			return nil, fmt.Errorf("nvidia-smi (pid %d) was killed at its deadline but has not exited yet; not starting another", st.unreapedPID)
		}
	}
	start := time.Now()
	timeout := p.gpuTimeout()
	dctx, cancel := context.WithTimeout(ctx, timeout) // one deadline for both runs
	defer cancel()
	out, err := p.runSMI(ctx, dctx, timeout, bin, "--query-gpu")
	if err != nil {
		return nil, err
	}
	var problems []string
	gpus, err := ParseGPUs(bytes.NewReader(out))
	if rerr := (*RowsError)(nil); errors.As(err, &rerr) {
		problems = append(problems, rerr.Error())
	} else if err != nil {
		return nil, err
	}
	slices.SortFunc(gpus, func(a, b GPU) int {
		switch {
		case a.Index == nil && b.Index != nil:
			return 1
		case a.Index != nil && b.Index == nil:
			return -1
		case a.Index != nil && *a.Index != *b.Index:
			return cmp.Compare(*a.Index, *b.Index)
		}
		return strings.Compare(a.UUID, b.UUID)
	})
	rec := &GPURecord{Sample: Sample{Schema: SchemaGPU}, Available: true, GPUs: gpus, Processes: []GPUProcess{}}
	if len(gpus) > 0 {
		out, err = p.runSMI(ctx, dctx, timeout, bin, "--query-compute-apps")
		if err != nil && ctx.Err() != nil {
			return nil, err // the caller gave up: no record
		}
		rec.Processes = nil
		if err != nil {
			rec.ProcessesError = err.Error()
		} else {
			rec.Processes, err = ParseGPUProcesses(bytes.NewReader(out))
			if rerr := (*RowsError)(nil); errors.As(err, &rerr) {
				problems = append(problems, rerr.Error())
			} else if err != nil {
				rec.ProcessesError = err.Error()
			}
		}
	}
	rec.ParseError = strings.Join(problems, "; ")
	rec.DurationMS = float64(time.Since(start)) / float64(time.Millisecond)
	rec.stamp(now, st.prev)
	st.prev = now
	return rec, nil
}

// findSMI resolves [Prober.NvidiaSMI]: a name with a '/' is a path that
// must exist, another name is looked up in PATH. Not found is ErrNoGPU.
func (p *Prober) findSMI() (string, error) {
	name := p.nvidiaSMI()
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%w: %v", ErrNoGPU, err)
			}
			return "", fmt.Errorf("nvidia-smi: %w", err)
		}
		return name, nil
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoGPU, err)
	}
	return bin, nil
}

// runSMI runs bin with query=fields and gpuFormat under rctx, ctx with
// the sample's deadline, timeout after the sample began, and returns its
// stdout.
func (p *Prober) runSMI(ctx, rctx context.Context, timeout time.Duration, bin, query string) ([]byte, error) {
	st := &p.gpu
	fields := GPUQueryFields
	if query == "--query-compute-apps" {
		fields = GPUProcessQueryFields
	}
	if rctx.Err() != nil { // the GPU query used up the deadline
		if ctx.Err() != nil {
			return nil, fmt.Errorf("nvidia-smi %s: %w", query, ctx.Err())
		}
		return nil, fmt.Errorf("nvidia-smi did not answer within %v; %s not run", timeout, query)
	}
	cmd := exec.CommandContext(rctx, bin, query+"="+fields, gpuFormat)
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A group of its own, to kill it with its children; killed too
	// should ds die first (Pdeathsig: the thread that started it is one
	// of the runtime's, which live as long as ds in practice).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	kill := st.killGroup
	if kill == nil {
		kill = func(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }
	}
	cmd.Cancel = func() error { return kill(cmd.Process.Pid) }
	cmd.WaitDelay = cmp.Or(st.waitDelay, gpuWaitDelay)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nvidia-smi %s: %w", query, err)
	}
	pid := cmd.Process.Pid
	if st.started != nil {
		deadline, _ := rctx.Deadline()
		st.started(query, pid, deadline)
	}
	done := make(chan struct{})
	var werr error
	go func() {
		werr = cmd.Wait()
		if errors.Is(werr, exec.ErrWaitDelay) {
			// It exited, but a child of its group held the pipes: the
			// group still exists (its pgid cannot have been reused).
			kill(pid)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-rctx.Done():
		// Cancel has killed the group; it should be reaped at once.
		t := time.NewTimer(cmp.Or(st.reapGrace, gpuReapGrace))
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			st.unreaped, st.unreapedPID = done, pid
			return nil, fmt.Errorf("nvidia-smi did not answer within %v; killed, but it has not exited (pid %d, %s)", timeout, pid, query)
		}
	}
	if werr != nil && rctx.Err() != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("nvidia-smi %s: %w", query, ctx.Err())
		}
		return nil, fmt.Errorf("nvidia-smi did not answer within %v; killed", timeout)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		msg := firstLine(stderr.b)
		if msg == "" {
			msg = firstLine(stdout.b)
		}
		if msg == "" {
			return nil, fmt.Errorf("nvidia-smi %s: %w", query, ee)
		}
		return nil, fmt.Errorf("nvidia-smi %s: %w: %s", query, ee, msg)
	case werr != nil && !errors.Is(werr, exec.ErrWaitDelay):
		return nil, fmt.Errorf("nvidia-smi %s: %w", query, werr)
	}
	return stdout.b, nil
}

// firstLine is the first non-blank line of b, trimmed and shortened.
func firstLine(b []byte) string {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if len(line) > 200 {
				line = line[:200]
			}
			return string(line)
		}
	}
	return ""
}

// cappedBuffer keeps the first maxSMIOutput bytes written to it.
type cappedBuffer struct{ b []byte }

// Write keeps what fits of p and reports it all written, so that
// nvidia-smi is never blocked nor failed by a full buffer.
func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxSMIOutput - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
