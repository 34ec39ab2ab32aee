package inventory

// IsKeyword reports whether kw can start a line HAProxy 3.0 accepts
// in some section: a keyword of any section list (keywords30.go), a
// section header, or the "no"/"default" modifiers. The syntax phase uses
// it only to tell a keyword that config-parser does not model (deferred to
// haproxy -c) from one that nothing knows (a syntax error).
func IsKeyword(kw string) bool {
	if kw == "" {
		return false
	}
	if kw == "no" || kw == "default" || SectionHeaders[kw] != "" {
		return true
	}
	for _, set := range SectionKeywords {
		if set[kw] {
			return true
		}
	}
	return false
}

// StartsSection reports whether kw starts a new configuration section as
// config-parser models sections (the section index of the syntax phase and
// the parse cache use it).
func StartsSection(kw string) bool {
	switch kw {
	case "global", "defaults", "frontend", "backend", "listen", "peers",
		"resolvers", "userlist", "mailers", "program", "http-errors", "ring",
		"cache", "fcgi-app", "log-forward":
		return true
	}
	return false
}

// SectionKeywords is sectionKeywordLists as sets.
var SectionKeywords = func() map[string]WordSet {
	m := make(map[string]WordSet, len(sectionKeywordLists))
	for k, v := range sectionKeywordLists {
		m[k] = NewWordSet(v)
	}
	return m
}()
