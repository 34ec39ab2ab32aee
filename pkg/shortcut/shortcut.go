// Package shortcut names the five ways htc skips work and holds the
// switches that turn each of them off.
//
//	Render   incremental rendering: a render reuses the work a recording
//	         render of the live state did (render.Input.Record, Full)
//	MapOnly  the map-only skip: a bundle that differs from one haproxy -c
//	         accepted only in maps HAProxy reads as plain strings reuses
//	         that run (haproxy.Result.SemanticReused), and so does one
//	         that also differs in maps read only by map_reg or map_regm
//	         once a stub haproxy -c of those maps alone accepts them
//	         (haproxy.Result.MapsCheckedAlone), and one whose haproxy.cfg
//	         has backend sections added once a stub haproxy -c of those
//	         sections accepts them (haproxy.Result.SectionsCheckedAlone)
//	ReadSet  the read-set skip: a change that leaves every field the
//	         templates read as it was is admitted without rendering
//	         (dryrun.Pipeline.RendersAlike), and, stored by an informer,
//	         starts no live round (package controller, alike.go); a
//	         fragment record that read an object so changed is reused
//	         (render.Input.ExactReads)
//	Carry    carried records: the render of a proposed config (a config
//	         UPDATE's admission) applies the live render's fragment
//	         records for the fragments whose templates, extraContext and
//	         output names it leaves as they are (render.Engine.Carry); it
//	         rests on Render and is not taken without it
//	Prune    pruned stores: the informers keep of each object only the
//	         fields the templates can read (dryrun.Pipeline.Keep,
//	         watched.Keep); off, they keep whole objects (after listing
//	         them again)
//
// Each shortcut gives the answer the full computation would, and the
// controller checks that at run time (package shadow). A shortcut caught
// giving another answer is turned off until the process restarts: the work
// is then done in full, never answered wrongly. The renderer, the checker
// and the admission path consult one Switches value, shared by every
// pipeline of the process; reading a switch is one atomic load.
package shortcut

import "sync/atomic"

// Kind is one of the shortcuts; its string is the value of the shortcut
// label of the htc_shortcut_* metrics.
type Kind string

// The shortcuts.
const (
	Render  Kind = "render"
	MapOnly Kind = "map-only"
	ReadSet Kind = "read-set"
	Prune   Kind = "prune"
	Carry   Kind = "carry"
)

// Kinds lists every shortcut, in a fixed order.
var Kinds = []Kind{Render, MapOnly, ReadSet, Prune, Carry}

// Switches says which shortcuts are off. The zero value has every shortcut
// on; a nil *Switches too (tools that never turn one off). Safe for
// concurrent use.
type Switches struct {
	render, mapOnly, readSet, prune, carry atomic.Bool // true: off
}

// On reports whether shortcut k may be taken.
func (s *Switches) On(k Kind) bool {
	if s == nil {
		return true
	}
	b := s.flag(k)
	return b == nil || !b.Load()
}

// TurnOff turns shortcut k off for the life of s and reports whether it
// was on. An unknown k is ignored.
func (s *Switches) TurnOff(k Kind) bool {
	if s == nil {
		return false
	}
	b := s.flag(k)
	return b != nil && b.CompareAndSwap(false, true)
}

func (s *Switches) flag(k Kind) *atomic.Bool {
	switch k {
	case Render:
		return &s.render
	case MapOnly:
		return &s.mapOnly
	case ReadSet:
		return &s.readSet
	case Prune:
		return &s.prune
	case Carry:
		return &s.carry
	}
	return nil
}
