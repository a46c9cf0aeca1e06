package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArchiveList: `teamspace-hook archive list` over a directory: records
// oldest first by their deletion time (else the file's), a file that is
// not a record marked, temporary files and other names left out; a missing
// directory, a file in its place and an empty one each one line; bad flags
// fail. The bucket's listing is tested on a real S3 server (s3_test.go,
// tests/cluster TestStatusListsTheBucket).
func TestArchiveList(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 9, 0, 0, 0, time.UTC) }
	write("late.u2.json", `{"name":"late","uid":"u2","pods":2,"deletionTimestamp":"2026-03-05T10:00:00Z"}`, day(1))
	write("early.u1.json", `{"name":"early","uid":"u1","pods":1,"deletionTimestamp":"2026-03-04T10:00:00Z"}`, day(9))
	write("undated.u3.json", `{"name":"undated","uid":"u3","pods":1}`, day(3))
	write("broken.json", `{truncated`, day(2))
	write(".tmp-late.u2.json", `{}`, day(1))
	write("notes.txt", `x`, day(1))

	list := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runArchive(append([]string{"list"}, args...), &out)
		return out.String(), err
	}
	got, err := list("--archive-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n")[1:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"NAME UID FILE DELETED AT",
		"broken (unreadable) broken.json 2026-03-02T09:00:00Z (file mtime)",
		"undated u3 undated.u3.json 2026-03-03T09:00:00Z (file mtime)",
		"early u1 early.u1.json 2026-03-04T10:00:00Z",
		"late u2 late.u2.json 2026-03-05T10:00:00Z",
		"4 records, 1 unreadable (not a TeamSpace record)",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant rows:\n%s", got, strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(got, "Archive records ("+dir+"):\n") {
		t.Errorf("listing does not start by naming the directory:\n%s", got)
	}

	empty := t.TempDir()
	aFile := filepath.Join(dir, "broken.json")
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(empty, "nope"), "none: " + filepath.Join(empty, "nope") + " does not exist"},
		{aFile, "none: " + aFile + " is not a directory"},
		{empty, "none: " + empty + " holds no records"},
	} {
		got, err := list("--archive-dir", c.dir)
		if err != nil || !strings.Contains(got, c.want) || strings.Count(got, "\n") != 2 {
			t.Errorf("archive list --archive-dir %s = %q, %v; want two lines with %q", c.dir, got, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(empty, "nope")); err == nil {
		t.Error("listing a missing directory created it")
	}
	for _, args := range [][]string{
		{"--archive-dir", dir, "--archive-s3-endpoint", "https://s3.example.com"},
		{"--archive-s3-bucket", "b"},
		{"extra"},
		{"--no-such-flag"},
	} {
		if _, err := list(args...); err == nil {
			t.Errorf("archive list %v: no error", args)
		}
	}
	var out bytes.Buffer
	if err := runArchive(nil, &out); err == nil || !strings.Contains(err.Error(), "usage: teamspace-hook archive list") {
		t.Errorf("archive without list: %v", err)
	}
}
