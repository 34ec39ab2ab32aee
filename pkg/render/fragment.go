package render

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/funcs"
)

// Fragments are htc's incremental rendering. The whole mechanism:
//
// {{ fragments NAME ITEMS }} renders the template NAME once per item of
// ITEMS (a list in order, a dict in key order), at that point of the output,
// with a dot of .item (the item, frozen: maps the render built and lists are
// copied), .key (a dict item's key), .resources and .extraContext. A
// fragment may modify only maps it creates, cannot call fragments or read
// emitted, and its effects are its text, its emits (emit CHANNEL KEY VALUE,
// the first value of a key wins) and the files it adds, applied in that
// order when it ends. So what a fragment does is a function of NAME, its
// item and what its store reads return: its record. A render with
// Input.Record keeps the record of every fragment; a later render (same
// BaseDir and size limit) applies the record for the same NAME and item
// instead of running NAME when each store read it recorded returns the same
// objects now (or objects that render alike them: fragment_reuse.go).
// Either way the same record is applied the same way.

// fragmentState is a render's fragment state.
type fragmentState struct {
	// ownedBefore: inside a fragment, the maps created up to its start
	// (owned seq <= ownedBefore) may not be modified; 0 outside.
	ownedBefore uint32
	channels    map[string]*fragments.Channel
	reuse       *fragments.Table // records this render may apply; nil: none
	recording   *fragments.Table // records this render keeps; nil: none
	key         []byte           // fragment's scratch buffer for keys
	// outputs are, in a recording render, the texts of the outputs done
	// (fragments.Table.End).
	outputs []string
	// check is what this render tells reuse's Reusable (reuseCheck).
	check fragments.Check
	// exact is Input.ExactReads; alikeSeen keeps alike's answers for
	// this render, by the two objects compared.
	exact     bool
	alikeSeen map[[2]unsafe.Pointer]bool
	// parts keeps one copy of equal emitted values (the engine's; nil in
	// a full render, the reference the shortcuts are checked against).
	parts *fragments.Parts
	// carried: reuse is another engine's table (Engine.Carry), whose
	// records only these fragment names may apply; nil: reuse is the
	// engine's own.
	carried map[string]bool
	// orders holds the keys, in order, of the dicts emitted returned,
	// by their address: a channel's (its Sorted keys, found when first
	// asked for) or the part of one ReadPrefix returned (its keys).
	orders map[unsafe.Pointer]keyOrder
	// valuesOf holds the lists values (emitted X) returned, by their
	// address, with their channel (fused.go).
	valuesOf map[unsafe.Pointer]valuesOf
	// newlined holds the texts joinedValues returned, by their address,
	// each with a newline after it (fused.go).
	newlined map[unsafe.Pointer]string
	// lazy, pos, applied, ranAt, skipped and pending: lazy channels
	// (fragment_lazy.go).
	lazy    bool
	pos     int
	applied int
	ranAt   []int
	skipped []int
	pending map[string][]pendingEmit
	// reused and ran count the fragments applied from records and run;
	// alike the records applied with objects read now (fragment_reuse.go);
	// carriedReused those of reused applied from a carried table.
	reused, ran, alike, carriedReused int
	// fromTable counts the channels read from the table's (lazy).
	fromTable int
	// scratch is the record every fragment of a full render runs into:
	// applied, then traced (tracker.fragment), never kept.
	scratch *fragments.Record
}

// scratchRecord returns the render's scratch record, emptied (its lists
// keep their room).
func (f *fragmentState) scratchRecord() *fragments.Record {
	r := f.scratch
	if r == nil {
		f.scratch = &fragments.Record{}
		return f.scratch
	}
	clear(r.Reads)
	clear(r.Emits)
	clear(r.Files)
	clear(r.Warnings)
	*r = fragments.Record{Reads: r.Reads[:0], Emits: r.Emits[:0], Files: r.Files[:0], Warnings: r.Warnings[:0]}
	return r
}

// reset forgets the render's fragment state.
func (f *fragmentState) reset() { *f = fragmentState{} }

// fragments implements fragments NAME ITEMS: ITEMS is a store
// (.resources.<key>: every object, as Each iterates them), a list or a
// dict.
func (s *renderState) fragments(name string, items any) (string, error) {
	if err := s.fragmentsCheck(name); err != nil {
		return "", err
	}
	return "", eachItem("fragments", items, s.sortedKeys, func(key string, item any) error {
		return s.fragment(name, key, item)
	})
}

// fragmentsCheck is what fragments NAME checks before it runs NAME.
func (s *renderState) fragmentsCheck(name string) error {
	if err := s.Interrupted(); err != nil {
		return err
	}
	if s.sources.frag != nil {
		return errors.New("fragments: a fragment cannot render fragments")
	}
	if s.tmpl == nil || s.tmpl.Lookup(name) == nil {
		return fmt.Errorf("fragments %q: no such template", name)
	}
	return nil
}

// eachItem calls fn with each item of a list (key "") or dict (in key
// order: order's keys when it knows them, else sorted); nil has no items.
func eachItem(fn string, items any, order func(map[string]any) []string, each func(key string, item any) error) error {
	switch x := items.(type) {
	case nil:
		return nil
	case *ResourceStore:
		objs, err := x.Fetch() // every object, read as Each reads them
		if err != nil {
			return err
		}
		for _, item := range objs {
			if err := each("", item); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		keys := order(x)
		if keys == nil {
			keys = slices.Sorted(maps.Keys(x))
		}
		for _, k := range keys {
			if err := each(k, x[k]); err != nil {
				return err
			}
		}
		return nil
	case []map[string]any:
		for _, item := range x {
			if err := each("", item); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for _, item := range x {
			if err := each("", item); err != nil {
				return err
			}
		}
		return nil
	}
	if rv := reflect.ValueOf(items); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		for i := range rv.Len() {
			if err := each("", rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: want a store, a list or a dict of items, got %T", fn, items)
}

// fragment renders NAME for one item: it applies a reusable record, or
// runs NAME and applies what it recorded.
func (s *renderState) fragment(name, key string, item any) error {
	k, err := fragments.AppendKey(s.frags.key[:0], name, key, item, s.isOwned)
	s.frags.key = k
	if err != nil {
		return fmt.Errorf("fragments %q: %w", name, err)
	}
	rec := s.reusable(name, k)
	ran := rec == nil
	if !ran {
		if err := s.Spend("fragments", rec.Scratch); err != nil {
			return err
		}
		s.frags.reused++
	} else {
		if rec, err = s.runFragment(name, key, item); err != nil {
			return err
		}
		s.frags.ran++
	}
	if s.frags.recording != nil {
		s.frags.recording.Add(k, rec, s.place())
	}
	if err := s.applyFragment(item, rec, ran, s.frags.check.Found); err != nil {
		return err
	}
	if ran && s.frags.recording == nil && rec != s.frags.scratch {
		// No table keeps it: only the source map reads it now (and a
		// materialize of lazy channels, its emits).
		rec.Slim(s.frags.lazy)
	}
	return nil
}

// place is where the fragment about to be applied writes its text: the
// end of the output being rendered when it writes to it, not to a capture
// (fragments.Table.End checks the text is there).
func (s *renderState) place() fragments.Place {
	if len(s.writers) != 1 {
		return fragments.Place{Out: -1}
	}
	return fragments.Place{Out: len(s.frags.outputs), Off: s.writers[0].Len()}
}

// runFragment runs NAME for item and returns its record. The item's object
// is current while it runs (a failure is attributed to it, and stays so);
// the source map is left alone until the record is applied.
func (s *renderState) runFragment(name, key string, item any) (*fragments.Record, error) {
	frozen, err := fragments.Freeze(item, s.isOwned, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("fragments %q: %w", name, err)
	}
	dot := map[string]any{"item": frozen, "key": key, "resources": s.root["resources"], "extraContext": s.root["extraContext"]}
	s.sources.enter(item)
	keep := s.frags.recording != nil
	var rec *fragments.Record
	switch {
	case keep:
		rec = &fragments.Record{Item: item}
	case s.sources.traces():
		rec = s.frags.scratchRecord() // traced, never kept (tracker.fragment)
	default:
		rec = &fragments.Record{}
	}
	buf := s.Capture()
	depth, before, scratch := s.depth, s.frags.ownedBefore, s.Scratch()
	s.depth, s.frags.ownedBefore, s.sources.frag = 0, s.ownSeq, rec
	s.writers = append(s.writers, &buf)
	err = s.tmpl.ExecuteTemplate(&buf, name, dot)
	s.writers = s.writers[:len(s.writers)-1]
	s.depth, s.frags.ownedBefore, s.sources.frag = depth, before, nil
	if err != nil {
		return nil, &fragmentError{name: name, err: err}
	}
	s.sources.ran()
	rec.Scratch = scratch - s.Scratch()
	if !keep {
		// Applied once, then slimmed (fragment): the capture's own bytes,
		// which nothing writes to any more, not a copy.
		rec.Text = unsafe.String(unsafe.SliceData(buf.Bytes()), buf.Len())
		return rec, nil
	}
	// Kept apart from the render's garbage (fragments.Slab).
	return s.frags.recording.Keep(rec, buf.Bytes()), nil
}

// applyFragment applies rec, the record of a fragment for item (ran: the
// fragment ran in this render, rec is not a reused record; else found is
// its position in the reused table's order, -1 when not known): its text
// is written where fragments was called, then its emits, files and
// warnings are applied (emits to lazy channels, fragment_lazy.go); the
// tracker writes down the fragment (its reads, text and files
// are the item's object's parts: replayFragment).
func (s *renderState) applyFragment(item any, rec *fragments.Record, ran bool, found int) error {
	w := s.writers[len(s.writers)-1]
	off := w.Len()
	if err := w.WriteUntracked(rec.Text); err != nil {
		return err
	}
	if err := s.applyEmits(rec, ran, found); err != nil {
		return err
	}
	for _, f := range rec.Files {
		if err := s.applyFile(string(f.Kind), f.Kind, f.Name, f.Text, f.Owner, false); err != nil {
			return err
		}
	}
	s.warnings = append(s.warnings, rec.Warnings...)
	s.sources.fragment(item, rec, off, ran)
	s.frags.applied++
	return nil
}

// emit implements emit CHANNEL KEY VALUE inside a fragment.
func (s *renderState) emit(channel, key string, value any) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	f := s.sources.frag
	if f == nil {
		return "", errors.New("emit: only a fragment may emit (see fragments)")
	}
	held := &f.Held // what Table.Reusable checks: only a kept record needs it
	if s.frags.recording == nil {
		held = nil
	}
	v, err := fragments.Freeze(value, s.isOwned, held, s.frags.parts)
	if err != nil {
		return "", fmt.Errorf("emit %q %q: %w", channel, key, err)
	}
	if err := s.Charge("emit", entrySize+int64(len(channel)+len(key))+funcs.StringsSize(v)); err != nil {
		return "", err
	}
	// One copy of the channel's name in every record (fragments.Names).
	f.Emits = append(f.Emits, fragments.Emission{Channel: s.engine.channelNames.Intern(channel), Key: key, Value: v})
	return "", nil
}

// emitted implements emitted CHANNEL [PREFIX]: the entries emitted on
// CHANNEL (a dict the template cannot modify), or only those whose key
// begins with PREFIX; the channel takes no more.
func (s *renderState) emitted(name string, prefix ...string) (map[string]any, error) {
	if err := s.emittedCheck(name, len(prefix)); err != nil {
		return nil, err
	}
	c := s.readChannel(name)
	if len(prefix) == 0 {
		m := c.Read()
		s.keepOrder(m, keyOrder{c: c})
		return m, nil
	}
	m, keys := c.ReadPrefix(prefix[0])
	s.keepOrder(m, keyOrder{keys: keys})
	return m, nil
}

// emittedCheck is what emitted CHANNEL checks before it reads CHANNEL,
// given n key prefixes.
func (s *renderState) emittedCheck(name string, n int) error {
	if err := s.Interrupted(); err != nil {
		return err
	}
	if s.sources.frag != nil {
		return fmt.Errorf("emitted %q: a fragment cannot read a channel", name)
	}
	if n > 1 {
		return fmt.Errorf("emitted %q: want one key prefix at most, got %d", name, n)
	}
	return nil
}

// keyOrder is how a dict emitted returned has its keys in order: those of
// channel c (Channel.Sorted), or keys.
type keyOrder struct {
	c    *fragments.Channel
	keys []string
}

// keepOrder remembers how m, a dict emitted returns, has its keys in
// order. emitted's dicts are never modified (no template can: they are
// not the render's own maps, see set), so the order holds for the render.
func (s *renderState) keepOrder(m map[string]any, o keyOrder) {
	if len(m) == 0 {
		return
	}
	if s.frags.orders == nil {
		s.frags.orders = map[unsafe.Pointer]keyOrder{}
	}
	s.frags.orders[mapPtr(m)] = o
}

// sortedKeys returns the keys of m in order when m is a dict emitted
// returned (the caller must not modify them), nil otherwise: iterating
// over such a dict (fragments, keys, values) does not sort its keys
// again.
func (s *renderState) sortedKeys(m map[string]any) []string {
	o, ok := s.frags.orders[mapPtr(m)]
	switch {
	case !ok:
		return nil
	case o.c != nil:
		return o.c.Sorted()
	}
	return o.keys
}

// channel returns the channel called name, created empty when new, with
// room for what it held in the Engine's last render.
func (s *renderState) channel(name string) *fragments.Channel {
	if s.frags.channels == nil {
		s.frags.channels = map[string]*fragments.Channel{}
	}
	c := s.frags.channels[name]
	if c == nil {
		var prev []string
		if b := s.frags.reuse.Channel(name); b != nil {
			prev = b.Sorted
		}
		c = fragments.NewChannel(s.engine.sizes.Load().channels[name], prev)
		s.frags.channels[name] = c
	}
	return c
}

// renderSizes are the sizes of the maps an Engine's last render filled:
// the next one makes them with room for as many instead of growing them
// step by step.
type renderSizes struct {
	channels map[string]int
	added    map[bundle.Kind]int
	files    int
}

// addedFiles is how many files the render added.
func (s *renderState) addedFiles() int {
	n := 0
	for _, m := range s.added {
		n += len(m)
	}
	return n
}

// keepSizes stores the sizes of s's maps in its Engine.
func (s *renderState) keepSizes() {
	sz := &renderSizes{channels: make(map[string]int, len(s.frags.channels)), added: make(map[bundle.Kind]int, len(s.added)), files: s.addedFiles()}
	// The channels of the table a render with lazy channels applied, and
	// did not build, keep the size they had.
	for name, n := range s.engine.sizes.Load().channels {
		if s.frags.reuse.Channel(name) != nil {
			sz.channels[name] = n
		}
	}
	for name, c := range s.frags.channels {
		sz.channels[name] = c.Len()
	}
	for k, m := range s.added {
		sz.added[k] = len(m)
	}
	s.engine.sizes.Store(sz)
}

// FragmentStats counts the fragments an Engine's renders rendered.
type FragmentStats struct {
	// Reused counts the fragments whose record was applied; Ran those whose
	// template ran.
	Reused, Ran int64
	// Alike counts the records of Reused applied with objects that render
	// alike the ones they read (fragment_reuse.go): objects that changed
	// only in fields no template reads.
	Alike int64
	// Carried counts the records of Reused that another engine's render
	// recorded (Engine.Carry).
	Carried int64
	// Confirmed counts the renders that reused records, failed, and were
	// rendered again in full (Render).
	Confirmed int64
	// Torn counts the renders during which a store they read was written,
	// rendered again over a snapshot of the stores (Render).
	Torn int64
	// Lazy counts the channels read as the recording render had them,
	// with the emits of the fragments run put in (fragment_lazy.go).
	Lazy int64
}

// FragmentStats returns the counts of the Engine's renders so far.
func (e *Engine) FragmentStats() FragmentStats {
	return FragmentStats{Reused: e.reused.Load(), Ran: e.ran.Load(), Alike: e.alike.Load(), Carried: e.carriedReused.Load(), Confirmed: e.confirmed.Load(), Torn: e.torn.Load(),
		Lazy: e.lazy.Load()}
}
