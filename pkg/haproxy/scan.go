package haproxy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// scanConfig scans haproxy.cfg.
func (s *policyScan) scanConfig(cfg string) {
	s.scanCfgText(bundle.ConfigFileName, cfg, sectionHeaders)
}

// scanCfgText scans a file HAProxy reads with readcfgfile(): haproxy.cfg,
// or a SPOE configuration with its own section headers.
func (s *policyScan) scanCfgText(file, text string, headers map[string]string) {
	s.section, s.sectionName, s.condDepth = "", "", 0
	physicalLines(text, func(n int, line string) {
		at := loc{file: file, line: n}
		if strings.IndexByte(line, 0) >= 0 {
			s.add(at, "", "NUL byte in configuration")
		}
		for piece := line; ; {
			lt := s.tok.tokenize(piece, envChecker, nil)
			if !lt.scope {
				s.scanTokens(at, piece, lt, headers)
			}
			if lt.scope || lt.rest == "" {
				return
			}
			piece = lt.rest
		}
	})
}

// scanTokens applies the rules to one line. A line with environment
// expansions is scanned twice: as HAProxy under the checker's environment
// tokenizes it, and with every variable set.
func (s *policyScan) scanTokens(at loc, raw string, lt lineTokens, headers map[string]string) {
	s.rejected = lt.err != errNone
	if len(lt.exps) == 0 {
		s.scanWords(at, lt.words, headers, false)
		return
	}
	s.checkExpansions(at, lt)
	s.scanWords(at, lt.words, headers, true)
	s.scanWords(at, s.tokAll.tokenize(raw, envAllSet, nil).words, headers, true)
}

// checkExpansions applies the environment rules to a line's expansions.
func (s *policyScan) checkExpansions(at loc, lt lineTokens) {
	s.refuseEnv(at)
	for _, e := range lt.exps {
		switch {
		case leakingVars[e.name]:
			s.add(at, "", "'"+e.name+"' expands to a host name or a path, which must not reach a message")
		case e.list:
			s.add(at, "", "the word list expansion ${"+s.short(e.name)+"[*]} makes words the policy cannot check")
		case e.glued && s.envAllowed():
			s.add(at, "", "HAProxy joins the next word to \"$"+s.short(e.name)+"\" when the variable is unset; give it a default (${"+s.short(e.name)+"-})")
		}
	}
}

// scanWords applies the directive, section and file rules to one line;
// exp reports environment expansions on the line.
func (s *policyScan) scanWords(at loc, words []cfgWord, headers map[string]string, exp bool) {
	if len(words) == 0 {
		return
	}
	if words[0].env {
		s.add(at, "", "a keyword built from an environment variable cannot be checked")
	}
	kw := words[0].text
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
		if args[0].env {
			s.add(at, "", "a keyword built from an environment variable cannot be checked")
		}
		kw, args = args[0].text, args[1:]
	}
	s.directive(at, kw, args)
}

// dotDirective handles the conditional and message directives
// (src/cfgparse.c readcfgfile).
func (s *policyScan) dotDirective(at loc, kw string, words []cfgWord, exp bool) {
	switch kw {
	case ".if":
		s.condDepth++
	case ".endif":
		if s.condDepth > 0 {
			s.condDepth--
		}
	}
	switch kw {
	case ".if", ".elif":
		// HAProxy joins the words with spaces before parsing the condition.
		var cond strings.Builder
		for _, w := range words[1:] {
			cond.WriteString(w.text)
		}
		if strings.Contains(cond.String(), "defined(") {
			s.refuseEnv(at)
		}
	case ".diag", ".notice", ".warning", ".alert":
		if exp {
			s.refuse(at, kw, "'"+kw+"' would print an environment variable")
		}
	case ".else", ".endif":
	default:
		s.add(at, "", "unknown directive '"+s.short(kw)+"'")
	}
}

// enterSection starts a section, unless HAProxy rejects the line (then it
// stays in the current one). A section started inside a conditional block
// is refused: which section the next lines belong to would depend on a
// condition the policy does not evaluate.
func (s *policyScan) enterSection(at loc, kw, list string, args []cfgWord) {
	if s.condDepth > 0 {
		s.add(at, "", "section '"+kw+"' starts inside a .if block; the policy cannot tell which section the next lines belong to")
	}
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
func (s *policyScan) directive(at loc, kw string, args []cfgWord) {
	if s.section == "" {
		// readcfgfile() passes a keyword before any section to no parser
		// at all: it is inert, and HAProxy rejects the configuration.
		return
	}
	if !sectionKeywords[s.section][kw] {
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
	if e, ok := lookupEntry(s.section, kw); ok && e.key != "" {
		s.refuseDirective(at, e.key)
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
	for _, e := range inventory {
		if e.where == e.name && e.key != "" {
			m[e.name] = append(m[e.name], e.key)
		}
	}
	return m
}()

// dangerousKeys maps the directives that load code, touch the environment
// or need a privilege, in any section, to their AllowedDirectives key.
var dangerousKeys = func() map[string]string {
	m := map[string]string{}
	for _, e := range inventory {
		switch e.where {
		case "bind", "server", "filter", "fetch":
		default:
			if e.key != "" {
				m[e.name] = e.key
			}
		}
	}
	return m
}()

// dangerousKey is the AllowedDirectives key of a dangerous directive, ""
// for any other keyword.
func dangerousKey(kw string) string { return dangerousKeys[kw] }
