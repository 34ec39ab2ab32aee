package policy

import (
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// This file mirrors how readcfgfile() (src/cfgparse.c, HAProxy 3.0) handles
// the conditional blocks .if/.elif/.else/.endif, so that the policy applies
// exactly the lines HAProxy applies (verified against haproxy 3.0.11 by
// cond_oracle_test.go):
//
//   - Every line is tokenized first, expanding the environment, also inside
//     a block HAProxy skips; a line the tokenizer rejects (a quote, a brace,
//     a bad escape, too many words) is reported and ignored whole, even a
//     .if or .endif (it neither opens nor closes a block).
//   - The four block directives are handled in every block, skipped or not,
//     with the state machine of enum nested_cond_state: the condition of a
//     .if or .elif is parsed and evaluated only when its branch can still
//     be taken (package cfgcond); a .if inside a skipped block is not even parsed.
//   - Any other line inside a skipped branch is dropped before anything
//     looks at it: no section starts, no keyword, no .alert/.notice/
//     .warning/.diag, no unknown-directive error.
//   - Errors that abort the configuration stop the reading of the file:
//     a condition HAProxy rejects, a lone or misplaced .elif or .else, more
//     than 99 nested blocks ("goto err": nothing more is checked); an
//     argument after .else or .endif, a lone .endif ("break": a block left
//     open is still reported). A block left open at the end of the file is
//     an error.
//
// The policy denies what it cannot evaluate (cfgcond.Unknown) and, to go on
// with one reading, then takes the branch.

// maxNestedConds is MAXNESTEDCONDS (include/haproxy/cfgcond-t.h).
const maxNestedConds = 100

// nestedCond is enum nested_cond_state.
type nestedCond uint8

const (
	condIfTake   nestedCond = iota // "if" with a true condition
	condIfDrop                     // "if" with a false condition
	condIfSkip                     // "if" masked by an outer false condition
	condElifTake                   // "elif" with a true condition from a false one
	condElifDrop                   // "elif" with a false condition from a false one
	condElifSkip                   // "elif" masked by an outer false condition or a previously taken if
	condElseTake                   // taken "else" after an if false condition
	condElseDrop                   // "else" masked by outer false condition or an if true condition
)

// masks reports whether lines under this state are skipped.
func (c nestedCond) masks() bool {
	switch c {
	case condIfDrop, condIfSkip, condElifDrop, condElifSkip, condElseDrop:
		return true
	}
	return false
}

// decided reports whether a branch of the block was taken or the whole
// block is masked, so that a later .elif or .else is skipped.
func (c nestedCond) decided() bool {
	switch c {
	case condIfTake, condIfSkip, condElifTake, condElifSkip:
		return true
	}
	return false
}

// condBlocks is readcfgfile()'s nested_cond_lvl and nested_conds[] for one
// file, and whether HAProxy stopped reading it (stopped: it left its loop,
// "break"; aborted: it left the function, "goto err").
type condBlocks struct {
	states           []nestedCond // states[i] is nested_conds[i+1]
	stopped, aborted bool
}

// masked reports whether the current line is inside a skipped branch.
func (b *condBlocks) masked() bool {
	return len(b.states) > 0 && b.states[len(b.states)-1].masks()
}

// blockDirective reports whether words start with a block directive
// HAProxy handles in every branch.
func blockDirective(words []cfgtext.Word) bool {
	if len(words) == 0 || words[0].Env {
		return false
	}
	switch words[0].Text {
	case ".if", ".elif", ".else", ".endif":
		return true
	}
	return false
}

// condLine applies one .if/.elif/.else/.endif line HAProxy accepted from
// the tokenizer.
func (s *policyScan) condLine(at loc, lt cfgtext.Line) {
	b := &s.blocks
	words := lt.Words
	kw := words[0].Text
	lvl := len(b.states)
	switch kw {
	case ".if":
		if lvl+1 >= maxNestedConds {
			s.abortFile(at, "too many nested '.if', HAProxy accepts at most 99")
			return
		}
		if b.masked() {
			b.states = append(b.states, condIfSkip)
			return
		}
		taken, ok := s.condition(at, kw, lt)
		if !ok {
			return
		}
		b.states = append(b.states, pick(taken, condIfTake, condIfDrop))
	case ".elif":
		if !s.inBlock(at, kw) {
			return
		}
		if b.states[lvl-1].decided() {
			b.states[lvl-1] = condElifSkip
			return
		}
		taken, ok := s.condition(at, kw, lt)
		if !ok {
			return
		}
		b.states[lvl-1] = pick(taken, condElifTake, condElifDrop)
	case ".else":
		if !s.noArgument(at, kw, words) || !s.inBlock(at, kw) {
			return
		}
		b.states[lvl-1] = pick(b.states[lvl-1].decided(), condElseDrop, condElseTake)
	case ".endif":
		if !s.noArgument(at, kw, words) {
			return
		}
		if lvl == 0 {
			s.stopFile(at, "lone '.endif' with no matching '.if'")
			return
		}
		b.states = b.states[:lvl-1]
	}
}

// pick returns a when c holds, else b.
func pick(c bool, a, b nestedCond) nestedCond {
	if c {
		return a
	}
	return b
}

// inBlock checks that a .elif or .else has an open .if whose .else has not
// been seen yet; otherwise HAProxy aborts.
func (s *policyScan) inBlock(at loc, kw string) bool {
	b := &s.blocks
	switch {
	case len(b.states) == 0:
		s.abortFile(at, "lone '"+kw+"' with no matching '.if'")
		return false
	case b.states[len(b.states)-1] == condElseTake || b.states[len(b.states)-1] == condElseDrop:
		s.abortFile(at, "'"+kw+"' after '.else' is not permitted")
		return false
	}
	return true
}

// noArgument checks that .else/.endif has no (non-empty) first argument,
// as readcfgfile() does; otherwise HAProxy aborts.
func (s *policyScan) noArgument(at loc, kw string, words []cfgtext.Word) bool {
	if len(words) > 1 && words[1].Text != "" {
		s.stopFile(at, "unexpected argument '"+s.short(words[1].Text)+"' for '"+kw+"'")
		return false
	}
	return true
}

// condition evaluates the condition of a .if/.elif line: whether the
// branch is taken, and false in ok when HAProxy aborts. A condition the
// policy cannot evaluate is denied and taken.
func (s *policyScan) condition(at loc, kw string, lt cfgtext.Line) (taken, ok bool) {
	var r cfgcond.Result
	if lt.NExp > 0 {
		r = cfgcond.Result{Value: cfgcond.Unknown, Reason: "the condition uses an environment variable, whose value differs between the checker and the HAProxy that runs the configuration"}
	} else {
		r = cfgcond.Eval(cfgcond.Text(lt), s.version)
	}
	switch r.Value {
	case cfgcond.Error:
		s.abortFile(at, "HAProxy rejects the condition of '"+kw+"': "+s.short(r.Reason))
		return false, false
	case cfgcond.Unknown:
		s.needVersion = s.needVersion || r.NeedVersion
		s.add(at, "", "the condition of '"+kw+"' cannot be evaluated before HAProxy runs: "+r.Reason)
		return true, true
	}
	return r.Value == cfgcond.True, true
}

// abortFile records an error after which HAProxy stops reading the file
// and checks nothing more ("goto err").
func (s *policyScan) abortFile(at loc, msg string) {
	s.add(at, "", msg)
	s.blocks.aborted = true
}

// stopFile records an error after which HAProxy stops reading the file
// but still checks that every block was closed ("break").
func (s *policyScan) stopFile(at loc, msg string) {
	s.add(at, "", msg)
	s.blocks.stopped = true
}

// endBlocks reports a block left open at the end of a file.
func (s *policyScan) endBlocks(file string, lines int) {
	if !s.blocks.aborted && len(s.blocks.states) > 0 {
		s.add(loc{file: file, line: lines}, "", "non-terminated '.if' block")
	}
}
