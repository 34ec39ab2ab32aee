package testrun

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/haproxy-template/htc/internal/contenthash"
)

// Store keeps complete test reports beyond one process (see Cache.Store).
type Store interface {
	// Load returns the report saved under key.
	Load(key string) (*Report, bool)
	// Save keeps r under key; failures are ignored (it is a cache).
	Save(key string, r *Report)
}

// DirStore is a Store of JSON files in a directory. Salt goes into every
// key: it must name everything besides the config that a report depends on
// (the htc build, the haproxy binary, the operator's grant).
type DirStore struct {
	// Dir holds the reports; it is created on the first Save.
	Dir string
	// Salt is mixed into every key.
	Salt string
}

// file is the path of key's report.
func (d DirStore) file(key string) string {
	return filepath.Join(d.Dir, contenthash.Of(d.Salt, key)+".json")
}

// Load reads key's report; a missing or unreadable one is a miss.
func (d DirStore) Load(key string) (*Report, bool) {
	data, err := os.ReadFile(d.file(key))
	if err != nil {
		return nil, false
	}
	var r Report
	if json.Unmarshal(data, &r) != nil || r.Total != len(r.Results) {
		return nil, false
	}
	return &r, true
}

// Save writes key's report atomically (a temp file renamed into place).
func (d DirStore) Save(key string, r *Report) {
	data, err := json.Marshal(r)
	if err != nil || os.MkdirAll(d.Dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(d.Dir, ".report-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), d.file(key)) != nil {
		_ = os.Remove(tmp.Name())
	}
}
