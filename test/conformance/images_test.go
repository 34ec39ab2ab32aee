package conformance

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	gwconformance "sigs.k8s.io/gateway-api/conformance"
)

// baseManifestsPath is the suite's base manifests in its embedded files.
const baseManifestsPath = "base/manifests.yaml"

var imageLine = regexp.MustCompile(`(?m)^\s*(?:-\s*)?image:\s*"?([^"\s]+)"?\s*$`)

// suiteImages reads every image the suite's embedded manifests (base,
// tests, mesh) use and splits them into the echo-basic ones (any
// repository ending in /echo-basic, any tag: all are served by the
// echo-basic built from the module's source) and the others, sorted.
func suiteImages() (echo, others []string, err error) {
	seen := map[string]bool{}
	err = fs.WalkDir(gwconformance.Manifests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := fs.ReadFile(gwconformance.Manifests, path)
		if err != nil {
			return err
		}
		for _, m := range imageLine.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the suite's manifests: %w", err)
	}
	for name := range seen {
		repo := name
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
			repo = name[:i]
		}
		if strings.HasSuffix(repo, "/echo-basic") {
			echo = append(echo, name)
		} else {
			others = append(others, name)
		}
	}
	slices.Sort(echo)
	slices.Sort(others)
	if len(echo) == 0 {
		return nil, nil, fmt.Errorf("no echo-basic image in the suite's manifests")
	}
	return echo, others, nil
}

// baseManifestsWithout returns the suite's base manifests without the
// documents that run one of images (which this run does not provide: the
// CoreDNS Deployment that backs UDPRoute tests, outside GATEWAY-HTTP).
// The suite waits for every pod of its namespaces to be Ready before any
// test, so a pod whose image cannot be pulled would fail every test.
func baseManifestsWithout(images []string) ([]byte, error) {
	b, err := fs.ReadFile(gwconformance.Manifests, baseManifestsPath)
	if err != nil {
		return nil, err
	}
	docs := strings.Split(string(b), "\n---\n")
	kept := docs[:0]
	for _, doc := range docs {
		drop := false
		for _, m := range imageLine.FindAllStringSubmatch(doc, -1) {
			if slices.Contains(images, m[1]) {
				drop = true
			}
		}
		if drop {
			fmt.Printf("test/conformance: base manifests: left out %s (its image is not provided)\n", docName(doc))
			continue
		}
		kept = append(kept, doc)
	}
	return []byte(strings.Join(kept, "\n---\n")), nil
}

var (
	kindLine = regexp.MustCompile(`(?m)^kind:\s*(\S+)`)
	nameLine = regexp.MustCompile(`(?m)^  name:\s*(\S+)`)
)

// docName is "Kind name" of a YAML document, for the log.
func docName(doc string) string {
	kind, name := "?", "?"
	if m := kindLine.FindStringSubmatch(doc); m != nil {
		kind = m[1]
	}
	if m := nameLine.FindStringSubmatch(doc); m != nil {
		name = m[1]
	}
	return kind + " " + name
}
