package benchkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loredev/lore/node/cmalloc"
)

// Phase is one step of a bench run: its wall time and the peak resident
// set of the process while it ran.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"s"`
	// PeakRSSBytes is the peak over this phase alone where the kernel can
	// reset the peak (/proc/self/clear_refs), else the peak since the
	// process started.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// AuditFills and AuditFillSeconds are the audit checkpoint gap fills
	// that ended during the phase and their wall time: background folds
	// that shared the cores and the read models' caches with it.
	AuditFills       int64   `json:"audit_fills"`
	AuditFillSeconds float64 `json:"audit_fill_s"`
}

// phases times the steps of a run, one after another, and logs each as it
// starts.
type phases struct {
	logf func(format string, args ...any)
	// heapDir, when set, receives a heap profile at the end of each phase,
	// and one at the run's peak resident set (watchPeak).
	heapDir string
	list    []Phase
	started time.Time
	peak    int64 // the highest phase peak: the run's peak RSS

	// fills, when set, reports the node's gap fills so far (node.AuditFills);
	// fills0 and busy0 are its figures when the running phase started.
	fills  func() (int64, time.Duration)
	fills0 int64
	busy0  time.Duration

	mu      sync.Mutex
	running string // the running phase's name; guarded by mu
}

// start ends the running phase (if any) and starts the next one.
func (p *phases) start(name string, format string, args ...any) {
	p.end()
	resetPeakRSS()
	p.mu.Lock()
	p.running = name
	p.mu.Unlock()
	p.list = append(p.list, Phase{Name: name})
	// The work the bench's goroutine does, and starts, from here on is
	// labelled with the phase in CPU profiles (go tool pprof -tagfocus
	// phase=NAME); the node's own goroutines are not.
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("phase", name)))
	if p.fills != nil {
		p.fills0, p.busy0 = p.fills()
	}
	p.started = time.Now()
	p.logf(format+" (RSS %.0f MiB)", append(args, mib(RSS()))...)
}

// end closes the running phase.
func (p *phases) end() {
	if len(p.list) == 0 || !p.started.After(time.Time{}) {
		return
	}
	ph := &p.list[len(p.list)-1]
	ph.Seconds = time.Since(p.started).Seconds()
	ph.PeakRSSBytes = PeakRSS()
	if p.fills != nil {
		n, busy := p.fills()
		ph.AuditFills, ph.AuditFillSeconds = n-p.fills0, (busy - p.busy0).Seconds()
	}
	p.peak = max(p.peak, ph.PeakRSSBytes)
	p.started = time.Time{}
	if p.heapDir != "" {
		if err := writeHeapProfile(filepath.Join(p.heapDir, fmt.Sprintf("heap-%02d-%s.pprof", len(p.list), strings.ReplaceAll(ph.Name, " ", "-")))); err != nil {
			p.logf("heap profile: %v", err)
		}
	}
}

// watchPeak samples the resident set until ctx ends. Each time it
// exceeds the highest seen by 64 MiB it writes heap-peak-<phase>.pprof
// (the phase's last one stays) and logs how much of it the Go runtime
// holds: what is not Go memory is outside the Go heap (Pebble's block
// cache and memtables in a cgo build, the C allocator's own).
func (p *phases) watchPeak(ctx context.Context) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var written int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rss := RSS()
		if rss < written+64<<20 {
			continue
		}
		written = rss
		p.mu.Lock()
		name := p.running
		p.mu.Unlock()
		metrics.Read(samples)
		goMem := int64(samples[0].Value.Uint64() - samples[1].Value.Uint64())
		cs, _ := cmalloc.Read()
		p.logf("peak RSS %.0f MiB in %s: Go runtime %.0f MiB (heap objects %.0f MiB), outside it %.0f MiB (C allocator: %.0f MiB in use, %.0f MiB freed and held)",
			mib(rss), name, mib(goMem), mib(int64(samples[2].Value.Uint64())), mib(rss-goMem), mib(cs.InUse), mib(cs.Free))
		file := filepath.Join(p.heapDir, "heap-peak-"+strings.ReplaceAll(name, " ", "-")+".pprof")
		if err := writeHeapProfile(file); err != nil {
			p.logf("heap profile: %v", err)
		}
	}
}

// writeHeapProfile writes the heap profile of the process to file.
func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// resetPeakRSS makes the kernel's peak resident set (VmHWM) restart from
// the current one; it does nothing where /proc/self/clear_refs is not
// writable.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// RSS is the process's current resident set (VmRSS) in bytes, 0 when /proc
// is not available.
func RSS() int64 { return procStatus("VmRSS:") }

// PeakRSS is the process's peak resident set (VmHWM) in bytes, 0 when
// /proc is not available.
func PeakRSS() int64 { return procStatus("VmHWM:") }

// procStatus reads a size in kB from /proc/self/status.
func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			if f := strings.Fields(rest); len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
