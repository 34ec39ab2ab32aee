package render

import (
	"crypto/sha256"
	"maps"
	"reflect"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// Carried records: a config change builds a new Engine, whose first render
// would run every fragment. What a fragment does (its record) depends on
// its name, its item, what its store reads return (all three checked as
// for any record, fragments.Table.Reusable), and on what the config gives
// it: the templates it can run, extraContext, the output names (pathFor,
// addFile), the BaseDir and the size limit (the table's). Carry hands a
// new engine the records of the live engine's last recording render, to
// be applied only for a fragment NAME whose reach (NAME and every template
// it can include or call, each by the text of the source defining it) is
// the same text in both engines, when extraContext and the output names
// are equal too. A reach with an include of a computed name, or a node the
// walk does not know, is never the same: such a fragment runs. The status
// documents' decodings are carried with the records (statusdocs.Decoder.Carry:
// decoding is a pure function of a document's text).

// carried is what Carry handed an engine: another engine's records and the
// fragment names that may apply them.
type carried struct {
	table *fragments.Table
	same  map[string]bool
}

// Carry lets e's renders apply the fragment records of from's last
// recording render, for the fragments whose reach is the same in both
// engines (see above), until e keeps records of its own. It returns how
// many template names may apply them; 0 when none may (then nothing is
// carried): another extraContext or other output names, no records, no
// reach in common.
func (e *Engine) Carry(from *Engine) int {
	if from == nil || from == e {
		return 0
	}
	t := from.table.Load()
	if t == nil || !reflect.DeepEqual(e.extra, from.extra) || !maps.EqualFunc(e.names, from.names, maps.Equal) {
		return 0
	}
	mine, theirs := e.reaches(), from.reaches()
	same := make(map[string]bool, len(mine))
	for name, d := range mine {
		if o, ok := theirs[name]; ok && o == d {
			same[name] = true
		}
	}
	if len(same) == 0 {
		return 0
	}
	e.carried.Store(&carried{table: t, same: same})
	e.status.Carry(from.status)
	return len(same)
}

// reaches returns the digest of the reach of every template whose reach is
// known (tree.Reaches, computed once for the template set).
func (c *compiled) reaches() map[string][sha256.Size]byte {
	c.reachOnce.Do(func() { c.reach = tree.Reaches(c.root, c.definedBy) })
	return c.reach
}
