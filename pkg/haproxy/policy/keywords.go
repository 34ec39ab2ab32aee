package policy

// isHAProxyKeyword reports whether kw can start a line HAProxy 3.0 accepts
// in some section: a keyword of any section list (keywords30.go), a
// section header, or the "no"/"default" modifiers. The syntax phase uses
// it only to tell a keyword that config-parser does not model (deferred to
// haproxy -c) from one that nothing knows (a syntax error).
func isHAProxyKeyword(kw string) bool {
	if kw == "" {
		return false
	}
	if kw == "no" || kw == "default" || sectionHeaders[kw] != "" {
		return true
	}
	for _, set := range sectionKeywords {
		if set[kw] {
			return true
		}
	}
	return false
}

// sectionKeyword reports whether kw starts a new configuration section as
// config-parser models sections (the section index of the syntax phase and
// the parse cache use it).
func sectionKeyword(kw string) bool {
	switch kw {
	case "global", "defaults", "frontend", "backend", "listen", "peers",
		"resolvers", "userlist", "mailers", "program", "http-errors", "ring",
		"cache", "fcgi-app", "log-forward":
		return true
	}
	return false
}
