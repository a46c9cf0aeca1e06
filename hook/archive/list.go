package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// maxRecordBytes bounds what a listing reads of one file: a record is a few
// hundred bytes, and a listing must not read a stray large file whole.
const maxRecordBytes = 1 << 20

// Listed is one entry of a listing: a record, or a *.json file beside the
// records that is not one (UID empty).
type Listed struct {
	// File is the file's name in the directory, or the object's in the
	// bucket's folder.
	File string
	// Name and UID are the record's; both empty for a file that is not a
	// record.
	Name, UID string
	// DeletedAt is the record's deletionTimestamp; zero when it has none.
	DeletedAt time.Time
	// Modified is the file's or the object's modification time.
	Modified time.Time
}

// When is the time a listing sorts and shows it by: when the TeamSpace was
// deleted, else when the file was written (fromFile true).
func (l Listed) When() (t time.Time, fromFile bool) {
	if l.DeletedAt.IsZero() {
		return l.Modified, true
	}
	return l.DeletedAt, false
}

// listed reads one file's content as a record, if it is one.
func listed(file string, modified time.Time, data []byte) Listed {
	l := Listed{File: file, Modified: modified.UTC()}
	var r struct {
		Name              string     `json:"name"`
		UID               string     `json:"uid"`
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	}
	if json.Unmarshal(data, &r) == nil && r.UID != "" {
		l.Name, l.UID = r.Name, r.UID
		if r.DeletionTimestamp != nil {
			l.DeletedAt = r.DeletionTimestamp.UTC()
		}
	}
	return l
}

// sortListed orders a listing oldest first (When), then by file name.
func sortListed(ls []Listed) {
	sort.Slice(ls, func(i, j int) bool {
		a, _ := ls[i].When()
		b, _ := ls[j].When()
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ls[i].File < ls[j].File
	})
}

// ListDir lists the *.json files of an archive directory without opening
// it as a sink: nothing is created or removed, so that a report can run as
// another user or before the hook ever did. An error wraps the file
// system's (fs.ErrNotExist, fs.ErrPermission, ENOTDIR).
func ListDir(dir string) ([]Listed, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the directory was read
		}
		data, err := readBounded(filepath.Join(dir, e.Name()))
		if err != nil {
			data = nil // listed as not a record
		}
		out = append(out, listed(e.Name(), info.ModTime(), data))
	}
	sortListed(out)
	return out, nil
}

func readBounded(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxRecordBytes))
}

// List lists the records of the directory (ListDir).
func (a *Archive) List(context.Context) ([]Listed, error) { return ListDir(a.dir) }

// List lists the *.json objects directly in the folder (not below it: a
// folder inside is another archive's), reading each.
func (s *S3) List(ctx context.Context) ([]Listed, error) {
	prefix := ""
	if s.cfg.Folder != "" {
		prefix = strings.TrimSuffix(s.cfg.Folder, "/") + "/"
	}
	var out []Listed
	for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("archive: %s: list: %s", s, describe(obj.Err))
		}
		name := strings.TrimPrefix(obj.Key, prefix)
		if strings.Contains(name, "/") || !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := s.get(ctx, obj.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, listed(path.Base(obj.Key), obj.LastModified, data))
	}
	sortListed(out)
	return out, nil
}

// get reads one object, bounded by maxRecordBytes and the timeout.
func (s *S3) get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("archive: %s: read %s: %s", s, key, describe(err))
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, maxRecordBytes))
	if err != nil {
		return nil, fmt.Errorf("archive: %s: read %s: %s", s, key, describe(err))
	}
	return data, nil
}
