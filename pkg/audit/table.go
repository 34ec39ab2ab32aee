// Package audit tells the owner of a cluster what a migration library
// (examples/ingress-nginx) would make of their Ingresses before they
// switch: every annotation in use classified by the library's own table,
// counted per Ingress and per annotation, beside the admission decision
// each Ingress would get (htc audit, cmd/htc). It never changes anything.
//
// The table is the library's: extraContext.annotations of its
// HAProxyTemplateConfig, keyed by annotation name without
// extraContext.annotationPrefix, each with a status (served, differs,
// refused) and a note. The templates judge annotations by it, htc audit
// classifies by it, and the README's status table is rendered from it
// (Table.Markdown): one list, not three.
package audit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/haproxy-template/htc/pkg/config"
)

// Status is what a library makes of an annotation.
type Status string

// The statuses; Unknown is an annotation with the prefix the table does
// not list.
const (
	Served  Status = "served"
	Differs Status = "differs"
	Refused Status = "refused"
	Unknown Status = "unknown"
)

// Statuses are the statuses in report order.
var Statuses = []Status{Served, Differs, Refused, Unknown}

// Entry is one annotation of the table.
type Entry struct {
	// Status is served, differs or refused.
	Status Status `json:"status"`
	// Note says how it differs, or why it is refused.
	Note string `json:"note,omitempty"`
	// Effect "none" marks an annotation accepted without effect.
	Effect string `json:"effect,omitempty"`
	// Alias names the annotation this one stands for.
	Alias string `json:"alias,omitempty"`
}

// Table is a library's annotation table.
type Table struct {
	// Prefix is the annotations' prefix ("nginx.ingress.kubernetes.io/").
	Prefix string
	// Entries are the annotations by name without the prefix.
	Entries map[string]Entry
}

// TableOf reads the table of cfg: extraContext.annotationPrefix and
// extraContext.annotations. A config without them has no table.
func TableOf(cfg *config.HAProxyTemplateConfig) (*Table, error) {
	var x struct {
		Prefix      string           `json:"annotationPrefix"`
		Annotations map[string]Entry `json:"annotations"`
	}
	if cfg.Spec.ExtraContext != nil {
		if err := json.Unmarshal(cfg.Spec.ExtraContext.Raw, &x); err != nil {
			return nil, fmt.Errorf("spec.extraContext: %w", err)
		}
	}
	if x.Prefix == "" || len(x.Annotations) == 0 {
		return nil, fmt.Errorf("the config has no annotation table (spec.extraContext.annotationPrefix and spec.extraContext.annotations); htc audit needs a migration library such as examples/ingress-nginx/config.yaml")
	}
	for name, e := range x.Annotations {
		switch e.Status {
		case Served, Differs, Refused:
		default:
			return nil, fmt.Errorf("spec.extraContext.annotations.%s.status: %q is not served, differs or refused", name, e.Status)
		}
	}
	return &Table{Prefix: x.Prefix, Entries: x.Annotations}, nil
}

// Classify returns the status of the annotation key (its full name) and
// its entry; ok is false when key does not have the table's prefix.
func (t *Table) Classify(key string) (status Status, e Entry, ok bool) {
	name, found := strings.CutPrefix(key, t.Prefix)
	if !found {
		return "", Entry{}, false
	}
	e, known := t.Entries[name]
	if !known {
		return Unknown, Entry{}, true
	}
	return e.Status, e, true
}

// Markdown is the table as a Markdown table, one row per annotation in
// name order: its full name, its status, and its note (with "no effect"
// for one accepted without effect, and the annotation an alias stands
// for).
func (t *Table) Markdown() string {
	names := make([]string, 0, len(t.Entries))
	for n := range t.Entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| annotation | status | notes |\n|---|---|---|\n")
	for _, n := range names {
		e := t.Entries[n]
		var notes []string
		if e.Alias != "" {
			notes = append(notes, "the same as `"+t.Prefix+e.Alias+"`")
		}
		if e.Effect == "none" {
			notes = append(notes, "no effect (the admission warns)")
		}
		if e.Note != "" {
			notes = append(notes, strings.ReplaceAll(e.Note, "|", "\\|"))
		}
		fmt.Fprintf(&b, "| `%s%s` | %s | %s |\n", t.Prefix, n, e.Status, strings.Join(notes, "; "))
	}
	return b.String()
}
