// Package archive keeps a durable record of every deleted TeamSpace outside
// the cluster, one JSON object each, in a directory (the default) or in an
// S3-compatible bucket. It is the hook's only side effect and the only code
// that touches storage.
//
// In a directory a record is never overwritten and never torn: it is
// written to a temporary file, synced, then hard-linked to its final name
// (link fails if the name exists, so two writers cannot clobber each other),
// and the directory is synced. A crash leaves either no record or a whole
// one.
package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// tmpPrefix marks temporary files; leftovers of a crash are removed at Open.
const tmpPrefix = ".tmp-"

// staleTmpAge protects temporary files another hook process may still be
// writing into a shared directory.
const staleTmpAge = 10 * time.Minute

// Sink is where finalize makes a record durable.
type Sink interface {
	// Store makes the record of the TeamSpace (name, uid) durable and
	// returns where it is. It is idempotent: a record of this uid that
	// exists is kept as it is; a record of another uid is never overwritten.
	// name and uid must already be validated as safe name parts.
	Store(ctx context.Context, name, uid string, record any) (string, error)
	// Check says whether records can be stored now (readiness).
	Check(ctx context.Context) error
	// List reads every record back, oldest first (`teamspace-hook archive
	// list`, the operator's report); files beside them that are not
	// records are listed too, without a UID.
	List(ctx context.Context) ([]Listed, error)
	// String names the sink in logs and messages.
	String() string
}

// encode is a record as stored: indented JSON and a newline.
func encode(record any) ([]byte, error) {
	data, err := json.MarshalIndent(record, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return append(data, '\n'), nil
}

// Archive writes records into one directory.
type Archive struct {
	dir string
	// durable remembers the records this process has itself made durable
	// (file name → uid). The engine calls finalize on every event until the
	// TeamSpace is gone; a record made durable here need not be synced
	// again. It is only a cache: after a restart every record found on disk
	// is synced once more, since an earlier process may have died before it
	// synced the directory.
	durable sync.Map
	// fsync makes a file or the directory durable: (*os.File).Sync, the one
	// seam in this package, so that a test can see which syncs happen in
	// which order (a power cut, what they guard against, cannot be staged).
	fsync func(*os.File) error
}

// Open creates the directory if needed (the default ./archive must work on a
// fresh machine) and removes stale temporary files. Later writes never
// create the directory: if it vanishes (an unmounted volume), finalize must
// fail rather than archive into the wrong place.
func Open(dir string) (*Archive, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("archive directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("archive directory: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTmpAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return &Archive{dir: dir, fsync: (*os.File).Sync}, nil
}

// Dir is the archive directory.
func (a *Archive) Dir() string { return a.dir }

// String names the sink.
func (a *Archive) String() string { return "directory " + a.dir }

// Check says whether the directory is still there (an unmounted volume is
// not re-created).
func (a *Archive) Check(context.Context) error {
	info, err := os.Stat(a.dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("archive: %s is not a directory", a.dir)
	}
	return nil
}

// identity is the part of a record that says whose it is.
type identity struct {
	UID string `json:"uid"`
}

// Store makes the record for (name, uid) durable and returns its file name.
// It is idempotent: if a record for this uid exists it is kept as it is and
// made durable again. The record goes to <name>.json, or to <name>.<uid>.json
// when <name>.json already holds an earlier TeamSpace of the same name.
// name and uid must already be validated as safe file name parts.
func (a *Archive) Store(_ context.Context, name, uid string, record any) (string, error) {
	data, err := encode(record)
	if err != nil {
		return "", err
	}
	for _, file := range []string{name + ".json", name + "." + uid + ".json"} {
		stored, err := a.storeAs(file, uid, data)
		if err != nil {
			return "", err
		}
		if stored {
			return file, nil
		}
	}
	return "", fmt.Errorf("archive records %s.json and %s.%s.json both exist and belong to other uids", name, name, uid)
}

// storeAs tries one file name. It returns false, without error, when the
// file belongs to another uid and must be left alone.
func (a *Archive) storeAs(file, uid string, data []byte) (bool, error) {
	path := filepath.Join(a.dir, file)
	owner, err := recordUID(path)
	if cached, ok := a.durable.Load(file); ok && cached == uid && err == nil && owner == uid {
		return true, nil
	}
	switch {
	case err == nil && owner == uid:
		if err := a.syncExisting(path); err != nil {
			return false, err
		}
		a.durable.Store(file, uid)
		return true, nil
	case err == nil:
		return false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}

	tmp, err := os.CreateTemp(a.dir, tmpPrefix+file+"-*")
	if err != nil {
		return false, fmt.Errorf("archive: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("archive: write %s: %w", tmp.Name(), err)
	}
	if err := a.fsync(tmp); err != nil {
		tmp.Close()
		return false, fmt.Errorf("archive: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("archive: close %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another writer won the race: decide again on what it wrote.
			return a.storeAs(file, uid, data)
		}
		return false, fmt.Errorf("archive: %w", err)
	}
	if err := a.syncDir(); err != nil {
		return false, err
	}
	a.durable.Store(file, uid)
	return true, nil
}

// recordUID reads whose record a file holds. A file that is not a record
// (unreadable JSON) counts as someone else's and is never overwritten.
func recordUID(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var id identity
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&id); err != nil || id.UID == "" {
		return "\x00not-a-record", nil
	}
	return id.UID, nil
}

// syncExisting makes a record found on disk durable: an earlier call may
// have crashed between linking it and syncing the directory.
func (a *Archive) syncExisting(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	if err := a.fsync(f); err != nil {
		return fmt.Errorf("archive: sync %s: %w", path, err)
	}
	return a.syncDir()
}

func (a *Archive) syncDir() error {
	d, err := os.Open(a.dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer d.Close()
	if err := a.fsync(d); err != nil {
		return fmt.Errorf("archive: sync directory %s: %w", a.dir, err)
	}
	return nil
}
