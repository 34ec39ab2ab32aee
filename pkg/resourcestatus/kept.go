package resourcestatus

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// Resolution is what a Resolve that succeeded found, kept for ResolveKept:
// the object found for each decoding (a Cache entry) and where, and the
// stores it read (the readers and their generations). It is never
// modified once built.
type Resolution struct {
	of     map[*Document]keptDoc
	pos    map[found]int        // the objects found, by position
	stores map[string]keptStore // store key -> the reader read, at its generation
	// versions are the apiVersions of the documents, with their
	// candidate stores' keys then (keptDoc.ver indexes them).
	versions []keptVersion
	n        int // how many documents
}

type keptDoc struct {
	key, rv string
	pos     int
	ver     int
}

type keptVersion struct {
	apiVersion string
	cands      []string
}

type keptStore struct {
	r   store.Reader
	gen uint64
}

// namesDelta is a store.Reader that tells, by name, what it answers
// otherwise than another reader did at a generation (store.Overlay,
// store.Store, store.Without).
type namesDelta interface {
	NamesDelta(of store.Reader, gen uint64) ([]store.Name, bool)
}

// Keep is Resolve(docs, stores, apiVersions), docs[i] a copy of the
// decoding from[i] (ParseDecodings), returning on success what it found
// for ResolveKept (nil when a store was written meanwhile: its reads are
// of no one generation).
func Keep(docs []Document, from []*Document, stores store.Set, apiVersions map[string]string) (*Resolution, error) {
	k := &Resolution{stores: map[string]keptStore{}, n: len(docs)}
	for key := range apiVersions {
		if r := stores[key]; r != nil {
			k.stores[key] = keptStore{r: r, gen: r.Generation()}
		}
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	if err := resolve(docs, stores, apiVersions, objs); err != nil {
		return nil, err
	}
	for _, ks := range k.stores {
		if ks.r.Generation() != ks.gen {
			return nil, nil
		}
	}
	k.of, k.pos = make(map[*Document]keptDoc, len(docs)), make(map[found]int, len(docs))
	ver := -1
	for i := range docs {
		d := &docs[i]
		if ver < 0 || k.versions[ver].apiVersion != d.APIVersion {
			ver = slices.IndexFunc(k.versions, func(v keptVersion) bool { return v.apiVersion == d.APIVersion })
			if ver < 0 {
				ver = len(k.versions)
				k.versions = append(k.versions, keptVersion{apiVersion: d.APIVersion, cands: candidates(d.APIVersion, stores, apiVersions)})
			}
		}
		k.pos[found{key: d.Store, obj: objs[i]}] = i
		if i < len(from) && from[i] != nil {
			k.of[from[i]] = keptDoc{key: d.Store, rv: d.ResourceVersion, pos: i, ver: ver}
		}
	}
	return k, nil
}

// ResolveKept is Resolve(docs, stores, apiVersions), docs[i] a copy of the
// decoding from[i] (ParseDecodings), taking what k found when it may
// (k: nil, or Keep's with the same apiVersions). The shortcut, and why its
// answer is Resolve's:
//
// A document's Store and ResourceVersion are those of the object Resolve
// finds for it: the first of the stores of its apiVersion (candidates)
// whose ByName of its namespace and name holds an object of its kind. A
// decoding k holds has the apiVersion, kind, namespace and name it had
// there; when its apiVersion has the same candidates and each answers
// ByName of its name as the reader k read did at its generation (same
// Store, same generation, not a name an Overlay or a Without changes:
// store NamesDelta), Resolve finds the same object, in the same store,
// with the same resourceVersion (objects are never modified). The other
// documents are resolved as Resolve does. A second document for one
// object: k's objects are distinct, one per decoding, so it is a decoding
// taken twice, or a document resolved anew that finds the object of a
// decoding taken (k's position of it), or two resolved anew. On that, on
// any refusal and on two apiVersions of one group, Resolve answers.
// FuzzResolveKeptIsResolve compares the two.
func ResolveKept(docs []Document, from []*Document, stores store.Set, apiVersions map[string]string, k *Resolution) error {
	if k == nil || len(from) != len(docs) {
		return Resolve(docs, stores, apiVersions)
	}
	changed := k.unchangedStores(stores)
	// The kept apiVersions whose candidates are the same, each read as
	// then; a document of the decoding k kept has its apiVersion.
	same := make([]bool, len(k.versions))
	for j, kv := range k.versions {
		same[j] = k.sameCandidates(kv, newVersion(kv.apiVersion, stores, apiVersions), changed)
	}
	seen := make([]bool, len(k.versions)) // the kept apiVersions taken
	used := make([]bool, k.n)
	var fresh []int
	for i := range docs {
		d := &docs[i]
		kd, ok := k.of[from[i]]
		if !ok || !same[kd.ver] || nameChanged(k.versions[kd.ver].cands, changed, d) {
			fresh = append(fresh, i)
			continue
		}
		if used[kd.pos] {
			return Resolve(docs, stores, apiVersions)
		}
		used[kd.pos], seen[kd.ver] = true, true
		d.Store, d.ResourceVersion = kd.key, kd.rv
	}
	// Resolve's versions: two apiVersions of one group make it tell
	// documents by identity (resolveByID); then, and on any refusal, it
	// answers.
	versions := map[string]*version{}
	for j, kv := range k.versions {
		if seen[j] {
			versions[kv.apiVersion] = newVersion(kv.apiVersion, stores, apiVersions)
		}
	}
	for _, i := range fresh {
		if d := &docs[i]; versions[d.APIVersion] == nil {
			versions[d.APIVersion] = newVersion(d.APIVersion, stores, apiVersions)
		}
	}
	groups := map[string]string{}
	for apiVersion, v := range versions {
		if v.err != nil || len(v.cands) == 0 {
			return Resolve(docs, stores, apiVersions)
		}
		if other, seen := groups[v.group]; seen && other != apiVersion {
			return Resolve(docs, stores, apiVersions)
		}
		groups[v.group] = apiVersion
	}
	first := make(map[found]bool, len(fresh))
	for _, i := range fresh {
		d := &docs[i]
		v := versions[d.APIVersion]
		key, obj := v.find(d)
		f := found{key: key, obj: obj}
		if p, taken := k.pos[f]; key == "" || first[f] || (taken && used[p]) {
			return Resolve(docs, stores, apiVersions)
		}
		first[f] = true
		d.Store, d.ResourceVersion = key, resourceVersion(obj)
	}
	return nil
}

// unchangedStores returns, for each store k read that stores reads as it
// was then (store NamesDelta), the names it answers otherwise; a store
// that is not so is absent.
func (k *Resolution) unchangedStores(stores store.Set) map[string][]store.Name {
	out := make(map[string][]store.Name, len(k.stores))
	for key, ks := range k.stores {
		nd, ok := stores[key].(namesDelta)
		if !ok {
			continue
		}
		if names, ok := nd.NamesDelta(ks.r, ks.gen); ok {
			out[key] = names
		}
	}
	return out
}

// sameCandidates reports whether v, the apiVersion of kv now, has the
// candidate stores it had in k, each read as then.
func (k *Resolution) sameCandidates(kv keptVersion, v *version, changed map[string][]store.Name) bool {
	if v.err != nil || !slices.Equal(kv.cands, v.cands) {
		return false
	}
	for _, key := range v.cands {
		if _, unchanged := changed[key]; !unchanged {
			return false
		}
	}
	return true
}

// nameChanged reports whether one of the stores cands answers ByName of
// d's name otherwise than then (the names first: they differ in length
// more often, and an unequal length is told without reading the bytes).
func nameChanged(cands []string, changed map[string][]store.Name, d *Document) bool {
	for _, key := range cands {
		for _, n := range changed[key] {
			if n.Name == d.Name && n.Namespace == d.Namespace {
				return true
			}
		}
	}
	return false
}
