package cfgtext

import "errors"

// ArgBufSize is the size of the trash buffer make_arg_list() decodes an
// argument into while the configuration is read: allocated with the
// default BUFSIZE (16384) and not resized before the configuration is
// parsed, whatever tune.bufsize says (init_trash_buffers, src/chunk.c).
const ArgBufSize = 16384

// The lists MakeArgList rejects, as make_arg_list() does.
var (
	// ErrArgBackslash: an argument ends with a backslash.
	ErrArgBackslash = errors.New("failed to parse an argument ending with a backslash")
	// ErrArgTooLong: an argument does not fit in ArgBufSize-1 bytes.
	ErrArgTooLong = errors.New("an argument longer than the parser's buffer")
	// ErrArgsMissing: fewer arguments than the mandatory ones.
	ErrArgsMissing = errors.New("missing arguments")
	// ErrArgsUnclosed: the list does not end with ')' after its last
	// argument (too many arguments, or no ')').
	ErrArgsUnclosed = errors.New("expected ')' after the arguments")
)

// MakeArgList is make_arg_list() (src/arg.c) as the parsers of conditions
// (cfg_parse_cond_term) and sample expressions call it, with len -1 and up
// to nbargs string arguments of which min are mandatory. s is the text
// after the keyword: the list starts with '(' (without one it is empty)
// and ends at its ')'; the end of s or a NUL byte ends the text, as the
// C string's NUL does. Within an argument single and double quotes
// toggle and are removed; outside single quotes a backslash escapes a
// backslash, a space or a quote and gives CR, LF and TAB for r, n and t,
// and stays before any other character; an unquoted ',' or ')' ends it.
//
// It returns the arguments, the length of s the list took (its ')'
// included), and, when HAProxy rejects the list, one of the Err values
// above with the arguments read in full before it.
func MakeArgList(s string, nbargs, min int) ([]string, int, error) {
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	i := 0
	empty := at(0) != '('
	if !empty {
		i++
	}
	var args []string
	// An empty list holds one empty argument when one is mandatory.
	for nbargs > 0 && (!empty || min > 0) {
		var out []byte
		if !empty {
			var err error
			if out, i, err = argWord(s, i); err != nil {
				return args, i, err
			}
		}
		args = append(args, string(out))
		if empty || at(i) == 0 || at(i) == ')' || len(args) >= nbargs {
			break
		}
		i++ // the comma
	}
	if len(args) < min {
		return args, i, ErrArgsMissing
	}
	if !empty {
		if at(i) != ')' {
			return args, i, ErrArgsUnclosed
		}
		i++
	}
	return args, i, nil
}

// argWord decodes the argument of make_arg_list() at s[i:] (up to an
// unquoted ',' or ')', or the end of the text), at most ArgBufSize-1
// bytes; it returns the position after it.
func argWord(s string, i int) ([]byte, int, error) {
	at := func(j int) byte {
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	var out []byte
	squote, dquote := false, false
	for c := at(i); c != 0 && len(out) < ArgBufSize-1; c = at(i) {
		switch {
		case c == '"' && !squote:
			dquote = !dquote
			i++
		case c == '\'' && !dquote:
			squote = !squote
			i++
		case c == '\\' && !squote:
			switch next := at(i + 1); next {
			case 0:
				return nil, i, ErrArgBackslash
			case '\\', ' ', '"', '\'':
				out = append(out, next)
				i += 2
			case 'r':
				out = append(out, '\r')
				i += 2
			case 'n':
				out = append(out, '\n')
				i += 2
			case 't':
				out = append(out, '\t')
				i += 2
			default:
				out = append(out, '\\') // a lone backslash
				i++
			}
		case !squote && !dquote && (c == ',' || c == ')'):
			return out, i, nil
		default:
			out = append(out, c)
			i++
		}
	}
	if c := at(i); c != 0 && c != ',' && c != ')' {
		return nil, i, ErrArgTooLong
	}
	return out, i, nil
}
