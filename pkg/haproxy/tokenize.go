package haproxy

// This file mirrors how HAProxy 2.6 cuts one configuration line into words
// (parse_line in src/tools.c), so that the policy sees the same keyword
// HAProxy will: quotes are removed and concatenated ("lua"-load), escapes are
// decoded (\x6cua-load), a NUL produced by \x00 ends the C string, '#'
// outside quotes starts a comment, and spaces, tabs, \v and \f separate
// words. Verified against haproxy 2.6.12 (see policy_test.go).

// lineWords is one configuration line cut into words.
type lineWords struct {
	// words are the decoded words, each truncated at its first NUL byte.
	words []string
	// envExpansion reports a '$' inside double quotes followed by a
	// character that starts a variable name, "{" or ".": HAProxy expands it.
	envExpansion bool
}

// isSpace reports whether c separates words (C isspace minus the line
// terminators, which never reach here).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f'
}

// isVarStart reports whether c after a '$' inside double quotes makes
// HAProxy expand an environment variable or pseudo-variable.
func isVarStart(c byte) bool {
	return c == '_' || c == '{' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// unhex decodes one hexadecimal digit.
func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitLine cuts one line (without its terminator) into words.
func splitLine(s string) lineWords {
	var (
		out            lineWords
		cur            []byte
		inWord         bool
		squote, dquote bool
	)
	flush := func() {
		if inWord {
			w := cur
			for i, c := range w {
				if c == 0 {
					w = w[:i]
					break
				}
			}
			out.words = append(out.words, string(w))
		}
		cur = cur[:0]
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case squote:
			if c == '\'' {
				squote = false
			} else {
				cur = append(cur, c)
			}
			inWord = true
		case c == '#' && !dquote:
			flush()
			return out
		case c == '\\' && i+1 < len(s):
			inWord = true
			n := s[i+1]
			switch n {
			case ' ', '\t', '\\', '#', '"', '\'', '$':
				cur = append(cur, n)
				i++
			case 'n':
				cur = append(cur, '\n')
				i++
			case 'r':
				cur = append(cur, '\r')
				i++
			case 't':
				cur = append(cur, '\t')
				i++
			case 'x':
				if i+3 < len(s) {
					hi, ok1 := unhex(s[i+2])
					lo, ok2 := unhex(s[i+3])
					if ok1 && ok2 {
						cur = append(cur, hi<<4|lo)
						i += 3
						continue
					}
				}
				cur = append(cur, c)
			default:
				cur = append(cur, c)
			}
		case c == '"':
			dquote = !dquote
			inWord = true
		case c == '\'' && !dquote:
			squote = true
			inWord = true
		case c == '$' && dquote && i+1 < len(s) && isVarStart(s[i+1]):
			out.envExpansion = true
			cur = append(cur, c)
			inWord = true
		case isSpace(c) && !dquote:
			flush()
		default:
			cur = append(cur, c)
			inWord = true
		}
	}
	flush()
	return out
}

// physicalLines splits text the way HAProxy reads it: on '\n'. Each returned
// line keeps its 1-based number. A line is further cut at '\r' and NUL into
// pieces: HAProxy ignores what follows them, but the policy scans every piece
// so nothing hides behind them.
func physicalLines(text string, fn func(lineNo int, piece string)) {
	lineNo := 1
	start := 0
	emit := func(line string) {
		ps := 0
		for j := 0; j < len(line); j++ {
			if line[j] == '\r' || line[j] == 0 {
				fn(lineNo, line[ps:j])
				ps = j + 1
			}
		}
		fn(lineNo, line[ps:])
	}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			emit(text[start:i])
			lineNo++
			start = i + 1
		}
	}
	if start < len(text) {
		emit(text[start:])
	}
}
