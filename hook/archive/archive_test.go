package archive

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	_ "github.com/labhub/teamspace/tests/golden" // understands -update
)

type rec struct {
	Name    string `json:"name"`
	UID     string `json:"uid"`
	Pods    int    `json:"pods"`
	Padding string `json:"padding,omitempty"`
}

func files(t *testing.T, dir string) map[string]rec {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rec{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			continue // an unlinked temporary file is not a record; Open cleans it later
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var r rec
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s is not a whole record: %v\n%q", e.Name(), err, b)
		}
		out[e.Name()] = r
	}
	return out
}

func TestStore(t *testing.T) {
	type call struct {
		name, uid string
		pods      int
		wantFile  string
	}
	tests := []struct {
		name      string
		existing  map[string]string // file -> content before
		calls     []call
		wantFiles map[string]rec
	}{
		{
			name:      "first record takes the plain name",
			calls:     []call{{"a", "u1", 3, "a.json"}},
			wantFiles: map[string]rec{"a.json": {"a", "u1", 3, ""}},
		},
		{
			name:      "repeated calls keep the first record",
			calls:     []call{{"a", "u1", 3, "a.json"}, {"a", "u1", 4, "a.json"}, {"a", "u1", 3, "a.json"}},
			wantFiles: map[string]rec{"a.json": {"a", "u1", 3, ""}},
		},
		{
			name:  "same name, new uid: the earlier record is kept",
			calls: []call{{"a", "u1", 3, "a.json"}, {"a", "u2", 5, "a.u2.json"}, {"a", "u2", 5, "a.u2.json"}, {"a", "u3", 7, "a.u3.json"}},
			wantFiles: map[string]rec{
				"a.json": {"a", "u1", 3, ""}, "a.u2.json": {"a", "u2", 5, ""}, "a.u3.json": {"a", "u3", 7, ""},
			},
		},
		{
			name:     "a file that is not a record is never overwritten",
			existing: map[string]string{"a.json": "{\"name\":\"a\",\"uid\":\"u0\",\"pods\":1}\n", "b.json": "{}"},
			calls:    []call{{"b", "u1", 2, "b.u1.json"}},
			wantFiles: map[string]rec{
				"a.json": {"a", "u0", 1, ""}, "b.json": {}, "b.u1.json": {"b", "u1", 2, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tt.existing {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.calls {
				got, err := a.Store(context.Background(), c.name, c.uid, rec{Name: c.name, UID: c.uid, Pods: c.pods})
				if err != nil || got != c.wantFile {
					t.Fatalf("Store(%s, %s) = %q, %v; want %q", c.name, c.uid, got, err, c.wantFile)
				}
			}
			if diff := cmp.Diff(tt.wantFiles, files(t, dir)); diff != "" {
				t.Errorf("archive (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenCreatesDirAndRemovesStaleTemporaryFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "archive")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tmpPrefix+"a.json-1")
	fresh := filepath.Join(dir, tmpPrefix+"b.json-2")
	for _, f := range []string{stale, fresh} {
		if err := os.WriteFile(f, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTmpAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file (another writer's) removed: %v", err)
	}
}

// TestStoreFailures: when the record cannot be made durable Store fails,
// so that finalize answers an error and never "finalized".
func TestStoreFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{name: "directory removed after start-up", setup: func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "read-only filesystem", setup: func(t *testing.T, dir string) {
			mountTmpfs(t, dir, "size=1m")
			remount(t, dir, "remount,ro")
		}},
		{name: "filesystem full", setup: func(t *testing.T, dir string) {
			mountTmpfs(t, dir, "size=8k")
			fill := make([]byte, 64<<10)
			_ = os.WriteFile(filepath.Join(dir, "filler"), fill, 0o644) // fills it; the error is expected
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "archive")
			a, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			big := rec{Name: "a", UID: "u1", Pods: 3, Padding: strings.Repeat("x", 16<<10)}
			if file, err := a.Store(context.Background(), "a", "u1", big); err == nil {
				t.Fatalf("Store succeeded (%s), want an error", file)
			}
			if _, err := os.Stat(filepath.Join(dir, "a.json")); !os.IsNotExist(err) {
				t.Errorf("a.json exists after a failed store: %v", err)
			}
		})
	}
}

func mountTmpfs(t *testing.T, dir, opts string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs to simulate the fault (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

func remount(t *testing.T, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -o %s: %v\n%s", opts, err, out)
	}
}

// childEnv makes the test binary a writer that stores records until killed.
const childEnv = "TEAMSPACE_ARCHIVE_WRITER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		a, err := Open(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		pad := strings.Repeat("p", 256<<10) // large enough to be killed mid-write
		fmt.Println("ready")
		for i := 0; ; i++ {
			name := fmt.Sprintf("t%d", i%50)
			file, err := a.Store(context.Background(), name, fmt.Sprintf("u%d", i), rec{Name: name, UID: fmt.Sprintf("u%d", i), Pods: i, Padding: pad})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Println("stored", file)
		}
	}
	os.Exit(m.Run())
}

// TestKilledWriterLeavesWholeRecords kills a writing process at random
// moments, many times: every record file must be whole afterwards. It
// proves atomicity (temporary file + link: no torn record under a name),
// not durability: a killed process leaves the page cache intact, so the
// fsyncs play no part here (TestStoreSyncsBeforeAnswering checks those).
func TestKilledWriterLeavesWholeRecords(t *testing.T) {
	dir := t.TempDir()
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for i := 0; i < rounds; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			t.Fatalf("writer did not start: %q", lines.Text())
		}
		if i == rounds-1 {
			// The last writer is killed right after a store, so that at
			// least one record exists and the check below means something.
			lines.Scan()
		} else {
			time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	n := 0
	for name, r := range files(t, dir) { // fails on any torn file
		if r.UID == "" || len(r.Padding) != 256<<10 {
			t.Errorf("%s is not a whole record", name)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no record was written at all: the test proves nothing")
	}
	t.Logf("%d whole records after %d kills", n, rounds)
}

// TestStoreSyncsBeforeAnswering proves durability as far as a test can: a
// power cut cannot be staged, so it watches the fsyncs (through the
// archive's one seam) and checks their order. A new record's data is
// synced before it gets its name, and the directory is synced after the
// link, before Store returns; otherwise the name could be lost in a crash
// after finalize said "archived". A record found on disk (an earlier
// process may have died between link and directory sync) is synced, file
// and directory, once per process; a record this process made durable is
// not synced again. TestKilledWriterLeavesWholeRecords proves the other
// half, atomicity: a killed writer leaves no torn record.
func TestStoreSyncsBeforeAnswering(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.json"), []byte(`{"name":"old","uid":"u0","pods":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var syncs []string
	a.fsync = func(f *os.File) error {
		name := filepath.Base(f.Name())
		switch {
		case f.Name() == dir:
			name = "dir"
		case strings.HasPrefix(name, tmpPrefix):
			name = "tmp"
		}
		// What is linked at the moment of the sync.
		_, linked := os.Stat(filepath.Join(dir, "a.json"))
		if linked == nil {
			name += "(a.json linked)"
		}
		syncs = append(syncs, name)
		return f.Sync()
	}
	steps := []struct {
		name, uid string
		want      []string
	}{
		{"a", "u1", []string{"tmp", "dir(a.json linked)"}},
		{"a", "u1", nil},
		{"old", "u0", []string{"old.json(a.json linked)", "dir(a.json linked)"}},
		{"old", "u0", nil},
	}
	for _, s := range steps {
		syncs = nil
		if _, err := a.Store(context.Background(), s.name, s.uid, rec{Name: s.name, UID: s.uid, Pods: 1}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.want, syncs); diff != "" {
			t.Errorf("Store(%s, %s) fsyncs (-want +got):\n%s", s.name, s.uid, diff)
		}
	}
}

// TestStoreFailsWhenASyncFails: finalize must not answer while a record is
// not durable, so a failing fsync (an I/O error) is Store's error.
func TestStoreFailsWhenASyncFails(t *testing.T) {
	for _, failing := range []string{"file", "directory"} {
		t.Run(failing, func(t *testing.T) {
			dir := t.TempDir()
			a, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			a.fsync = func(f *os.File) error {
				if (f.Name() == dir) == (failing == "directory") {
					return syscall.EIO
				}
				return f.Sync()
			}
			if file, err := a.Store(context.Background(), "a", "u1", rec{Name: "a", UID: "u1"}); err == nil {
				t.Fatalf("Store = %s, want an error when the %s sync fails", file, failing)
			}
			a.fsync = (*os.File).Sync
			if _, err := a.Store(context.Background(), "a", "u1", rec{Name: "a", UID: "u1"}); err != nil {
				t.Fatalf("Store after the fault: %v", err)
			}
		})
	}
}
