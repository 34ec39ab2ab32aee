package audit

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Use is one annotation an Ingress carries, classified.
type Use struct {
	// Name is the annotation's full name.
	Name string `json:"name"`
	// Status is what the library makes of it.
	Status Status `json:"status"`
	// Note says how it differs or why it is refused.
	Note string `json:"note,omitempty"`
}

// Uses classifies the annotations with the table's prefix, in name order
// (the others are not the library's business).
func (t *Table) Uses(annotations map[string]string) []Use {
	var out []Use
	for key := range annotations {
		if st, e, ok := t.Classify(key); ok {
			out = append(out, Use{Name: key, Status: st, Note: e.Note})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Verdict is what the library's admission check says of an Ingress once
// it is served: allowed (with warnings) or denied and why, and the
// failures of the Ingress the current state already has.
type Verdict struct {
	Allowed  bool     `json:"allowed"`
	Reason   string   `json:"reason,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Failing are failures of the Ingress as it is served now (an
	// Ingress already of the library's class that is broken).
	Failing []string `json:"failing,omitempty"`
}

// Ingress is the audit of one Ingress.
type Ingress struct {
	Namespace   string         `json:"namespace"`
	Name        string         `json:"name"`
	Class       string         `json:"class"`
	Annotations []Use          `json:"annotations"`
	Counts      map[Status]int `json:"counts"`
	Verdict     Verdict        `json:"verdict"`
}

// Annotation is one annotation in use across the audited Ingresses.
type Annotation struct {
	Name      string `json:"name"`
	Status    Status `json:"status"`
	Note      string `json:"note,omitempty"`
	Ingresses int    `json:"ingresses"`
}

// Totals sum a report up.
type Totals struct {
	Ingresses int `json:"ingresses"`
	// Admitted and Denied count the verdicts; Failing the Ingresses
	// already served and broken.
	Admitted int `json:"admitted"`
	Denied   int `json:"denied"`
	Failing  int `json:"failing"`
	// Annotations counts the annotations in use (one per Ingress that
	// carries it) by status.
	Annotations map[Status]int `json:"annotations"`
}

// Report is the audit of a cluster's Ingresses of some classes against a
// library.
type Report struct {
	// Classes are the ingress classes audited; LibraryClass is the class
	// the library serves, which each Ingress was judged as.
	Classes      []string     `json:"classes"`
	LibraryClass string       `json:"libraryClass"`
	Ingresses    []Ingress    `json:"ingresses"`
	Annotations  []Annotation `json:"annotations"`
	Totals       Totals       `json:"totals"`
}

// NewReport sums up the audits of ings (in namespace/name order, their
// counts filled in).
func NewReport(classes []string, libraryClass string, ings []Ingress) *Report {
	r := &Report{Classes: classes, LibraryClass: libraryClass, Ingresses: ings,
		Annotations: []Annotation{}, Totals: Totals{Ingresses: len(ings), Annotations: map[Status]int{}}}
	sort.Slice(r.Ingresses, func(i, j int) bool {
		a, b := r.Ingresses[i], r.Ingresses[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	byName := map[string]*Annotation{}
	for i := range r.Ingresses {
		ing := &r.Ingresses[i]
		ing.Counts = map[Status]int{}
		if ing.Annotations == nil {
			ing.Annotations = []Use{}
		}
		for _, u := range ing.Annotations {
			ing.Counts[u.Status]++
			r.Totals.Annotations[u.Status]++
			a := byName[u.Name]
			if a == nil {
				a = &Annotation{Name: u.Name, Status: u.Status, Note: u.Note}
				byName[u.Name] = a
			}
			a.Ingresses++
		}
		switch {
		case !ing.Verdict.Allowed:
			r.Totals.Denied++
		default:
			r.Totals.Admitted++
		}
		if len(ing.Verdict.Failing) > 0 {
			r.Totals.Failing++
		}
	}
	for _, a := range byName {
		r.Annotations = append(r.Annotations, *a)
	}
	rank := map[Status]int{Refused: 0, Unknown: 1, Differs: 2, Served: 3}
	sort.Slice(r.Annotations, func(i, j int) bool {
		a, b := r.Annotations[i], r.Annotations[j]
		if rank[a.Status] != rank[b.Status] {
			return rank[a.Status] < rank[b.Status]
		}
		if a.Ingresses != b.Ingresses {
			return a.Ingresses > b.Ingresses
		}
		return a.Name < b.Name
	})
	return r
}

// OK reports whether every audited Ingress would be admitted and none is
// failing now.
func (r *Report) OK() bool { return r.Totals.Denied == 0 && r.Totals.Failing == 0 }

// WriteText prints the report for people: a table of the Ingresses (the
// counts of their annotations by status, and the verdict), a table of
// the annotations in use (refused and unknown first), and the totals.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INGRESS\tSERVED\tDIFFERS\tREFUSED\tUNKNOWN\tVERDICT")
	for _, ing := range r.Ingresses {
		v := "admitted"
		if !ing.Verdict.Allowed {
			v = "denied: " + ing.Verdict.Reason
		} else if n := len(ing.Verdict.Warnings); n > 0 {
			v = fmt.Sprintf("admitted, %d warning%s", n, plural(n))
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%d\t%d\t%d\t%s\n", ing.Namespace, ing.Name, ing.Counts[Served], ing.Counts[Differs], ing.Counts[Refused], ing.Counts[Unknown], v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Annotations) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nANNOTATION\tSTATUS\tINGRESSES\tNOTE")
		for _, a := range r.Annotations {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.Name, a.Status, a.Ingresses, a.Note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	for _, ing := range r.Ingresses {
		for _, warning := range ing.Verdict.Warnings {
			fmt.Fprintf(w, "warning: %s\n", warning)
		}
		for _, f := range ing.Verdict.Failing {
			fmt.Fprintf(w, "failing now: %s/%s: %s\n", ing.Namespace, ing.Name, f)
		}
	}
	t := r.Totals
	_, err := fmt.Fprintf(w, "%d Ingress%s of class %s judged as class %s: %d admitted, %d denied, %d failing now; annotations in use: %d served, %d differ, %d refused, %d unknown\n",
		t.Ingresses, pluralES(t.Ingresses), strings.Join(r.Classes, ", "), r.LibraryClass, t.Admitted, t.Denied, t.Failing,
		t.Annotations[Served], t.Annotations[Differs], t.Annotations[Refused], t.Annotations[Unknown])
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralES(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}
