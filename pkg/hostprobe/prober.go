package hostprobe

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Default settings of a [Prober].
const (
	DefaultProcRoot   = "/proc"
	DefaultSysRoot    = "/sys"
	DefaultNvidiaSMI  = "nvidia-smi"
	DefaultGPUTimeout = 5 * time.Second
)

// ErrNoGPU is returned (wrapped) by [Prober.ReadGPU] when nvidia-smi is not
// there (not found in PATH, or the configured path does not exist): a host
// without NVIDIA GPUs, which a caller records once and then ignores. A
// failing driver (nvidia-smi there but exiting non-zero, hanging) is a real
// error, not ErrNoGPU.
var ErrNoGPU = errors.New("nvidia-smi not found")

// Prober reads the host's counters and turns successive reads into host
// records. Each Read method keeps its own previous read, so that rates
// and percentages cover the interval between two reads; the first read of
// each is a priming read whose record has null rates (reset "first").
//
// The Read methods of different channels may run concurrently (ds host
// runs ReadGPU on a goroutine of its own, so that a slow nvidia-smi never
// delays the other channels); one Read method must not be called
// concurrently with itself.
//
// Set the exported fields before the first read. Files are read as
// ProcRoot/… and SysRoot/…, so that a fixture tree, or a host's /proc
// mounted elsewhere in a container (node_exporter's --path.procfs), can
// stand in for the real ones.
type Prober struct {
	// ProcRoot is where procfs is mounted ("" means DefaultProcRoot).
	ProcRoot string
	// SysRoot is where sysfs is mounted ("" means DefaultSysRoot): the
	// cgroup controllers are read under SysRoot/fs/cgroup.
	SysRoot string
	// NvidiaSMI is the nvidia-smi program: a path, or a name looked up in
	// PATH ("" means DefaultNvidiaSMI).
	NvidiaSMI string
	// GPUTimeout bounds one GPU sample, both runs of nvidia-smi together
	// (zero or negative means DefaultGPUTimeout): one that takes longer
	// is killed, with its process group, and the read returns an error.
	GPUTimeout time.Duration
	// Interfaces, when not empty, are the path.Match patterns of the
	// network interfaces ReadNet reports ("eth*", "en*"); others are
	// left out.
	Interfaces []string

	cpu cpuState
	mem memState
	net netState
	gpu gpuState
}

func (p *Prober) procPath(elem ...string) string {
	root := p.ProcRoot
	if root == "" {
		root = DefaultProcRoot
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

func (p *Prober) sysPath(elem ...string) string {
	root := p.SysRoot
	if root == "" {
		root = DefaultSysRoot
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

func (p *Prober) nvidiaSMI() string {
	if p.NvidiaSMI == "" {
		return DefaultNvidiaSMI
	}
	return p.NvidiaSMI
}

func (p *Prober) gpuTimeout() time.Duration {
	if p.GPUTimeout <= 0 {
		return DefaultGPUTimeout
	}
	return p.GPUTimeout
}

// readFile reads one small proc or sys file whole. It uses the system
// calls directly (open, read until 0, close: no fstat, no poller
// registration, no finalizer as os.Open has): syscalls are most of what a
// sample costs, and ds host --interval 100ms reads a dozen files ten
// times a second. Files under /proc report a size of 0, so it reads until
// a read returns 0 (a short read is not the end: a seq_file returns what
// one pass rendered) into a buffer that grows; it refuses more than
// maxProcFile bytes (a fixture or a mount gone wrong cannot make the
// sampler hold unbounded memory). Errors are *os.PathError naming the
// file.
func readFile(name string) ([]byte, error) {
	if strings.HasPrefix(name, "/proc/") || strings.HasPrefix(name, "/sys/") {
		if b, ok := procFiles.read(name); ok {
			return b, nil
		}
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 8192)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxProcFile {
				return nil, &os.PathError{Op: "read", Path: name, Err: errTooLarge}
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// procFiles keeps open the files of the real procfs and sysfs that
// readFile reads (/proc/stat, /proc/meminfo, the cgroup's cpu.max, … :
// never replaced, only regenerated at each read from offset 0, as top and
// htop read them; a cgroup removed makes the read fail, and the file is
// opened again, or the error returned), so that a tick
// costs one pread per file and its end-of-file read instead of open, read,
// read and close: opening a proc file walks its path, and this is most of
// a sample's cost. At most maxOpenProcFiles stay open (the least recently
// read is closed to open another); files elsewhere (fixture trees, which
// tests rewrite) are opened at each read.
var procFiles = openFiles{fds: map[string]*openFile{}}

// maxOpenProcFiles bounds the descriptors procFiles holds.
const maxOpenProcFiles = 32

type openFiles struct {
	mu    sync.Mutex
	fds   map[string]*openFile
	clock uint64 // counts reads, for evicting the least recently read
}

type openFile struct {
	fd   int
	buf  []byte // what the last read used, kept for the next
	used uint64 // o.clock at the last read
}

// read reads name whole from a descriptor kept open, and returns a copy;
// ok is false when that cannot be done (too many open, an error: the
// caller opens the file itself, and gets the error).
func (o *openFiles) read(name string) ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.fds[name]
	if f == nil {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, false
		}
		if len(o.fds) >= maxOpenProcFiles {
			o.evictLocked() // a file no longer read (a cgroup left behind)
		}
		f = &openFile{fd: fd, buf: make([]byte, 8192)}
		o.fds[name] = f
	}
	o.clock++
	f.used = o.clock
	n := 0
	for {
		if n == len(f.buf) {
			if n >= maxProcFile {
				break
			}
			f.buf = append(f.buf, make([]byte, len(f.buf))...)
		}
		k, err := rawPread(f.fd, f.buf[n:], int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break
		}
		if k == 0 {
			return bytes.Clone(f.buf[:n]), true
		}
		n += k
		if n < wholeRead && n < len(f.buf) {
			// The whole file (see wholeRead): no end-of-file read.
			return bytes.Clone(f.buf[:n]), true
		}
	}
	syscall.Close(f.fd)
	delete(o.fds, name)
	return nil, false
}

// wholeRead is the size under which a read of a proc or sys file that
// returned less than it was asked for had the whole file, so that no
// read at the end of the file follows it (one system call less a file,
// a tick). procfs and sysfs files are seq_files and kernfs attributes,
// which fill a read from a buffer of at least a page and stop short of
// it only at the end of the file, or when the next record does not fit
// in what is left of the page: a short read under half a page would take
// a record over half a page, and the records of the files read here are
// lines (a line of /proc/net/dev is about 130 bytes; /proc/stat,
// /proc/meminfo, /proc/loadavg and the cgroup files are one record).
const wholeRead = 2048

// rawPread is syscall.Pread without the runtime's entering and leaving
// of a system call (syscall.RawSyscall6): a read of a proc or sys file
// held open does not block, and entering a system call is what wakes the
// runtime's monitor thread (sysmon) from its sleep between ticks, which
// then polls every 20 µs for the rest of the tick: each of those wakes a
// context switch, most of what an idle sampler costs on a VM.
func rawPread(fd int, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(off), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// evictLocked closes the least recently read file.
func (o *openFiles) evictLocked() {
	var oldest string
	for name, f := range o.fds {
		if oldest == "" || f.used < o.fds[oldest].used {
			oldest = name
		}
	}
	syscall.Close(o.fds[oldest].fd)
	delete(o.fds, oldest)
}

// maxProcFile is the largest proc or sys file readFile takes: /proc/stat
// of a 4096-CPU machine is about 600 KiB.
const maxProcFile = 16 << 20

var errTooLarge = errors.New("file larger than 16 MiB")
