package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// A case's input is one of two files. RequestFile is a request stored as
// it is: the engine's recorded requests, byte for byte. PatchFile derives a
// request from another case's, so that what a hand-made case changes is all
// it holds:
//
//	{"base": "sync/recorded-steady", "patch": {"parent": {"spec": {"pods": 0}}}}
//
// base is a case folder relative to the testdata root whose input is a
// RequestFile; patch is a JSON merge patch (RFC 7386) applied to it.
const (
	RequestFile = "request.json"
	PatchFile   = "patch.json"
)

// Patch is the content of a PatchFile.
type Patch struct {
	Base  string          `json:"base"`
	Patch json.RawMessage `json:"patch"`
}

// Cases lists the case folders of one hook under root (testdata), sorted:
// every folder that holds a RequestFile or a PatchFile.
func Cases(t testing.TB, root, hook string) []string {
	t.Helper()
	var dirs []string
	for _, f := range []string{RequestFile, PatchFile} {
		m, err := filepath.Glob(filepath.Join(root, hook, "*", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	sort.Strings(dirs)
	for i := 1; i < len(dirs); i++ {
		if dirs[i] == dirs[i-1] {
			t.Fatalf("%s has both %s and %s", dirs[i], RequestFile, PatchFile)
		}
	}
	return dirs
}

// Request returns the request body of the case folder dir (below root):
// its RequestFile verbatim, or its base's with its patch applied.
func Request(t testing.TB, root, dir string) []byte {
	t.Helper()
	body, err := RequestOf(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// RequestOf is Request for callers without a testing.TB (fuzz seeds,
// benchmarks' set-up).
func RequestOf(root, dir string) ([]byte, error) {
	body, err := os.ReadFile(filepath.Join(dir, RequestFile))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return body, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, PatchFile))
	if err != nil {
		return nil, err
	}
	var p Patch
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, errors.New(filepath.Join(dir, PatchFile) + ": " + err.Error())
	}
	if p.Base == "" || len(p.Patch) == 0 {
		return nil, errors.New(filepath.Join(dir, PatchFile) + ": wants both base and patch")
	}
	base, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p.Base), RequestFile))
	if err != nil {
		return nil, errors.New(filepath.Join(dir, PatchFile) + ": base: " + err.Error())
	}
	return MergePatch(base, p.Patch)
}

// MergePatch applies a JSON merge patch (RFC 7386) to doc: objects merge
// key by key, null deletes a key, anything else replaces. Numbers keep
// their spelling ("4.0", 1e30), which is what some cases are about.
func MergePatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeNumbers(doc)
	if err != nil {
		return nil, err
	}
	p, err := decodeNumbers(patch)
	if err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

// decodeNumbers decodes JSON with numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergeValue(dm[k], v)
	}
	return dm
}
