// Package manifest reads Kubernetes objects from YAML/JSON manifests (files
// or directories of multi-document files) and resolves their kinds to
// resources offline, so that `htc check` and `htc render` can fill stores
// without a cluster.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is a decoded manifest object and where it came from.
type Object struct {
	// Object is the decoded object.
	*unstructured.Unstructured
	// Source is "file.yaml#2": the file and the 1-based document index.
	Source string
}

// LoadPaths reads every object from the given files and directories.
// Directories are read recursively, taking *.yaml, *.yml and *.json files in
// lexical order. Multi-document files and v1 Lists are expanded. Empty
// documents are skipped. An error names the file and document.
func LoadPaths(paths []string) ([]Object, error) {
	var out []Object
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			objs, err := LoadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// LoadFile reads every object of one file.
func LoadFile(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return Decode(path, data)
}

// Decode decodes every object of a multi-document YAML or JSON stream; name
// is used in error messages and Object.Source.
func Decode(name string, data []byte) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for doc := 1; ; doc++ {
		// Each document as JSON, then decoded as the API machinery decodes
		// what the informers and the webhook receive (whole numbers as
		// int64, not float64): a template sees the same values in htc
		// render and htc check as in the controller.
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: invalid YAML: %w", name, doc, err)
		}
		var m map[string]any
		if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
			if err := utiljson.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("%s: document %d: not an object: %w", name, doc, err)
			}
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		src := fmt.Sprintf("%s#%d", name, doc)
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", name, doc)
		}
		if u.IsList() {
			err := u.EachListItem(func(o runtimeObject) error {
				item, ok := o.(*unstructured.Unstructured)
				if !ok {
					return fmt.Errorf("list item is %T", o)
				}
				out = append(out, Object{Unstructured: item, Source: src})
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
			}
			continue
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: %s has no metadata.name", name, doc, u.GetKind())
		}
		out = append(out, Object{Unstructured: u, Source: src})
	}
}

// expand lists the manifest files a path names.
func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifest directory %s: %w", p, err)
	}
	sort.Strings(files)
	return files, nil
}
