package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// scanConfig scans haproxy.cfg.
func (s *policyScan) scanConfig(cfg string) {
	s.scanCfgText(bundle.ConfigFileName, cfg, inventory.SectionHeaders)
}

// scanCfgText scans a file HAProxy reads with readcfgfile(): haproxy.cfg,
// or a SPOE configuration with its own section headers. Lines inside a
// branch HAProxy skips are only checked for what HAProxy still does with
// them (cfgblock.go).
func (s *policyScan) scanCfgText(file, text string, headers map[string]string) {
	s.section, s.sectionName = "", ""
	s.blocks = condBlocks{}
	last := 0
	for n, line := range Lines(text) {
		if s.blocks.aborted || s.blocks.stopped {
			break
		}
		last = n
		at := loc{file: file, line: n}
		if strings.IndexByte(line, 0) >= 0 {
			s.add(at, "", "NUL byte in configuration")
		}
		lt := s.tok.Tokenize(line, cfgtext.EnvChecker, nil)
		if lt.Scope {
			continue
		}
		rest := lt.Rest
		s.scanLine(at, line, lt, headers)
		if rest != "" {
			s.scanIgnored(at, rest, headers)
		}
	}
	s.endBlocks(file, last)
}

// scanLine applies the rules to one line HAProxy reads, as
// readcfgfile() does: block directives in every branch, only the
// tokenizer's work inside a skipped branch, everything else otherwise.
func (s *policyScan) scanLine(at loc, raw string, lt cfgtext.Line, headers map[string]string) {
	switch {
	case lt.Err == cfgtext.NoError && blockDirective(lt.Words):
		if len(lt.Exps) > 0 {
			s.checkExpansions(at, lt)
		}
		s.condLine(at, lt)
	case s.blocks.masked():
		// HAProxy tokenized the line, expanding the environment, and
		// drops it.
		if len(lt.Words) > 0 && lt.Words[0].Env {
			s.add(at, "", "a keyword built from an environment variable cannot be checked")
		}
		if len(lt.Exps) > 0 {
			s.checkExpansions(at, lt)
		}
	default:
		s.scanTokens(at, raw, lt, headers)
	}
}

// scanIgnored scans the text HAProxy ignores after a NUL or a line-ending
// '\r' with every rule, as if it were lines of its own, but without letting
// it change what the policy's reading of the next lines depends on: the
// section, the base directories, the conditional blocks.
func (s *policyScan) scanIgnored(at loc, rest string, headers map[string]string) {
	section, name, bases, cwd := s.section, s.sectionName, s.bases, s.cwd.clone()
	s.ghost = true
	defer func() { s.section, s.sectionName, s.bases, s.cwd, s.ghost = section, name, bases, cwd, false }()
	for piece := rest; piece != ""; {
		lt := s.tok.Tokenize(piece, cfgtext.EnvChecker, nil)
		if lt.Scope {
			return
		}
		if blockDirective(lt.Words) {
			if len(lt.Exps) > 0 {
				s.checkExpansions(at, lt)
			}
		} else {
			s.scanTokens(at, piece, lt, headers)
		}
		piece = lt.Rest
	}
}

// scanTokens applies the rules to one line. A line with environment
// expansions is scanned twice: as HAProxy under the checker's environment
// tokenizes it, and with every variable set.
func (s *policyScan) scanTokens(at loc, raw string, lt cfgtext.Line, headers map[string]string) {
	s.rejected = lt.Err != cfgtext.NoError
	if len(lt.Exps) == 0 {
		s.scanWords(at, lt.Words, headers, false)
		return
	}
	s.checkExpansions(at, lt)
	s.scanWords(at, lt.Words, headers, true)
	s.scanWords(at, s.tokAll.Tokenize(raw, cfgtext.EnvAllSet, nil).Words, headers, true)
}

// checkExpansions applies the environment rules to a line's expansions.
func (s *policyScan) checkExpansions(at loc, lt cfgtext.Line) {
	s.refuseEnv(at)
	for _, e := range lt.Exps {
		switch {
		case cfgtext.Leaking(e.Name):
			s.add(at, "", "'"+e.Name+"' expands to a host name or a path, which must not reach a message")
		case e.List:
			s.add(at, "", "the word list expansion ${"+s.short(e.Name)+"[*]} makes words the policy cannot check")
		case e.Glued && s.envAllowed():
			s.add(at, "", "HAProxy joins the next word to \"$"+s.short(e.Name)+"\" when the variable is unset; give it a default (${"+s.short(e.Name)+"-})")
		}
	}
}

// scanWords applies the directive, section and file rules to one line;
// exp reports environment expansions on the line.
func (s *policyScan) scanWords(at loc, words []cfgtext.Word, headers map[string]string, exp bool) {
	if len(words) == 0 {
		return
	}
	if words[0].Env {
		s.add(at, "", "a keyword built from an environment variable cannot be checked")
	}
	kw := words[0].Text
	if strings.HasPrefix(kw, ".") {
		s.dotDirective(at, kw, words, exp)
		return
	}
	if list, ok := headers[kw]; ok {
		s.enterSection(at, kw, list, words[1:])
		return
	}
	args := words[1:]
	if (kw == "no" || kw == "default") && len(args) > 0 {
		if args[0].Env {
			s.add(at, "", "a keyword built from an environment variable cannot be checked")
		}
		kw, args = args[0].Text, args[1:]
	}
	s.directive(at, kw, args)
}

// dotDirective handles the message directives of a branch HAProxy takes
// (src/cfgparse.c readcfgfile): they print their argument, so an
// expansion in it is refused. HAProxy stops reading the file after a
// .alert with one argument and after an unknown directive. The block
// directives of a line HAProxy rejects come here too: HAProxy ignores the
// line.
func (s *policyScan) dotDirective(at loc, kw string, words []cfgtext.Word, exp bool) {
	switch kw {
	case ".diag", ".notice", ".warning", ".alert":
		if exp {
			s.refuse(at, kw, "'"+kw+"' would print an environment variable")
		}
		if kw == ".alert" && !s.rejected && !s.ghost && (len(words) < 3 || words[2].Text == "") {
			s.blocks.aborted = true
		}
	case ".if", ".elif", ".else", ".endif":
	default:
		s.add(at, "", "unknown directive '"+s.short(kw)+"'")
		if !s.rejected && !s.ghost {
			s.blocks.stopped = true
		}
	}
}

// enterSection starts a section, unless HAProxy rejects the line (then it
// stays in the current one).
func (s *policyScan) enterSection(at loc, kw, list string, args []cfgtext.Word) {
	if !s.rejected {
		s.section, s.sectionName = list, kw
	}
	for _, key := range sectionKeys[kw] {
		s.refuseDirective(at, key)
	}
	if kw == "crt-store" {
		s.bases.storeCrt, s.bases.storeKey = s.bases.crt, s.bases.key
	}
	s.scanArgs(at, kw, args)
}

// directive checks one keyword line of the current section. A keyword
// HAProxy 3.0 does not accept there is denied with HAProxy's own words; a
// dangerous one is named as such wherever it appears.
func (s *policyScan) directive(at loc, kw string, args []cfgtext.Word) {
	if s.section == "" {
		// readcfgfile() passes a keyword before any section to no parser
		// at all: it is inert, and HAProxy rejects the configuration.
		return
	}
	if !inventory.SectionKeywords[s.section][kw] {
		if key := dangerousKey(kw); key != "" && !s.allowed[key] {
			s.refuseDirective(at, key)
			return
		}
		if k := (unknownKey{at, kw}); !s.unknown[k] && !s.full() {
			s.unknown[k] = true
			s.add(at, "", "unknown keyword '"+s.short(kw)+"' in '"+s.sectionName+"' section")
		}
		return
	}
	if e, ok := lookupEntry(s.section, kw); ok && e.Key != "" {
		s.refuseDirective(at, e.Key)
	}
	if h := handlerFor(s.section, kw); h != nil {
		h(s, at, kw, args)
	}
	s.scanArgs(at, kw, args)
}

// unknownKey identifies an unknown keyword reported at a line.
type unknownKey struct {
	at loc
	kw string
}

// sectionKeys maps a section keyword to the AllowedDirectives keys that
// permit the section itself (the inventory's entries whose place and name
// are that keyword), in inventory order: enterSection looked them up in
// the whole inventory for every section of a configuration.
var sectionKeys = func() map[string][]string {
	m := map[string][]string{}
	for _, e := range inventory.Table {
		if e.Where == e.Name && e.Key != "" {
			m[e.Name] = append(m[e.Name], e.Key)
		}
	}
	return m
}()

// dangerousKeys maps the directives that load code, touch the environment
// or need a privilege, in any section, to their AllowedDirectives key.
var dangerousKeys = func() map[string]string {
	m := map[string]string{}
	for _, e := range inventory.Table {
		switch e.Where {
		case "bind", "server", "filter", "fetch":
		default:
			if e.Key != "" {
				m[e.Name] = e.Key
			}
		}
	}
	return m
}()

// dangerousKey is the AllowedDirectives key of a dangerous directive, ""
// for any other keyword.
func dangerousKey(kw string) string { return dangerousKeys[kw] }
