package benchutil

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Proc is one process of a private setup, named by its program
// (kube-apiserver, kine, metacontroller, teamspace-hook, ...).
type Proc struct {
	Name string
	PID  int
}

// FindProcs lists the processes whose command line names dir (the setup's
// state directory: every component gets a path inside it), except the
// control plane's own supervisor.
func FindProcs(dir string) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		name := filepath.Base(string(argv0))
		if name == "controlplane" || name == "bash" || name == "sh" {
			continue
		}
		out = append(out, Proc{Name: name, PID: pid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// CPUSeconds is the process's user + system CPU time.
func (p Proc) CPUSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are fixed.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", p.PID)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks, nil
}

// Memory is VmRSS and VmHWM (peak) in MiB.
func (p Proc) Memory() (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if k == "VmRSS" {
			rss = kb / 1024
		} else {
			hwm = kb / 1024
		}
	}
	return rss, hwm, nil
}

// CPUSample is every process's CPU seconds at one moment.
type CPUSample map[string]float64

// SampleCPU reads the CPU seconds of procs (a process that is gone counts 0).
func SampleCPU(procs []Proc) CPUSample {
	out := CPUSample{}
	for _, p := range procs {
		s, _ := p.CPUSeconds()
		out[p.Name] += s
	}
	return out
}

// FormatCPU prints the CPU seconds spent between two samples, per process:
// cpu_<name>_s=<seconds>.
func FormatCPU(before, after CPUSample) string {
	parts := make([]string, 0, len(after))
	for _, n := range slices.Sorted(maps.Keys(after)) {
		parts = append(parts, fmt.Sprintf("cpu_%s_s=%.1f", short(n), after[n]-before[n]))
	}
	return strings.Join(parts, " ")
}

// Cores is the CPU cores every process spent on average between two
// samples secs apart, by short name, and their sum under "total". The bench
// program itself is left out of the total: it is the observer.
func Cores(before, after CPUSample, secs float64) map[string]float64 {
	out := map[string]float64{}
	for n, v := range after {
		c := (v - before[n]) / secs
		out[short(n)] = c
		if short(n) != "fleet" {
			out["total"] += c
		}
	}
	return out
}

// FormatCores prints Cores as cores_<name>=<cores> in name order, and, when
// base is not nil, above_empty_cores: the total above base's total.
func FormatCores(cores, base map[string]float64) string {
	names := make([]string, 0, len(cores))
	for n := range cores {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names)+1)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("cores_%s=%.4f", n, cores[n]))
	}
	if base != nil {
		parts = append(parts, fmt.Sprintf("above_empty_cores=%.4f", cores["total"]-base["total"]))
	}
	return strings.Join(parts, " ")
}

// short shortens the program names for RESULT lines.
func short(name string) string {
	switch name {
	case "kube-apiserver":
		return "apiserver"
	case "kube-controller-manager":
		return "kcm"
	case "metacontroller":
		return "engine"
	case "teamspace-hook":
		return "hook"
	}
	return name
}

// FormatMemory prints every process's RSS and peak RSS in MiB.
func FormatMemory(procs []Proc) string {
	var parts []string
	for _, p := range procs {
		rss, hwm, err := p.Memory()
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("rss_%s_mib=%.0f hwm_%s_mib=%.0f", short(p.Name), rss, short(p.Name), hwm))
	}
	return strings.Join(parts, " ")
}
