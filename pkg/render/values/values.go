package values

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// Error is a value that field, safe, word or quoteValue refused to put
// into the configuration. Object ("Ingress default/web") and Field
// ("spec.rules[0].host") are set when the template supplied them.
type Error struct {
	// Template names the template source of the call (set by package
	// render when the call fails).
	Template string
	// Line is the 1-based line of the call, 0 when unknown.
	Line int
	// Object describes the resource the value came from, if known.
	Object string
	// Field is the path of the value in Object, if known.
	Field string
	// Message is the full description, naming Object and Field when known.
	Message string
	// source is the object the value came from, when the template passed it.
	source map[string]any
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Location is "template NAME line N", "template NAME" without a line, ""
// without a template (phase.Located).
func (e *Error) Location() string {
	switch {
	case e.Template == "":
		return ""
	case e.Line > 0:
		return fmt.Sprintf("template %s line %d", e.Template, e.Line)
	}
	return "template " + e.Template
}

// Source is the object the value came from when the template passed it,
// else nil.
func (e *Error) Source() map[string]any { return e.source }

// refuseSuffix ends the message of every refused value.
const refuseSuffix = "; refusing to write it into the configuration"

// valueOrigin says where a value came from, for messages. The object's
// description is only built when a message needs it.
type valueOrigin struct {
	obj    map[string]any // the object, if known
	object string         // its description ("Ingress default/web"), once built
	field  string         // "spec.rules[0].host"
}

// named returns o with its object description built.
func (o valueOrigin) named() valueOrigin {
	if o.obj != nil && o.object == "" {
		o.object = describeObject(o.obj)
	}
	return o
}

// describe returns how a message names the value v from o.
func (o valueOrigin) describe(v string) string {
	switch {
	case o.object != "" && o.field != "":
		return o.object + ": " + o.field
	case o.object != "":
		return o.object + ": value " + quoteForMessage(v)
	case o.field != "":
		return o.field
	default:
		return "value " + quoteForMessage(v)
	}
}

// errorf builds the *Error for a value v from o: "<what> <problem>".
func (o valueOrigin) errorf(v, problem string) *Error {
	o = o.named()
	return &Error{Object: o.object, Field: o.field, Message: o.describe(v) + " " + problem, source: o.obj}
}

// quoteForMessage quotes v for an error message, escaped and truncated.
func quoteForMessage(v string) string {
	const max = 40
	if utf8.RuneCountInString(v) > max {
		return strconv.Quote(string([]rune(v)[:max])) + "…"
	}
	return strconv.Quote(v)
}

// describeObject names a Kubernetes object as "<Kind> <namespace>/<name>".
func describeObject(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	if kind == "" {
		kind = "object"
	}
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	switch {
	case ns != "" && name != "":
		return kind + " " + ns + "/" + name
	case name != "":
		return kind + " " + name
	default:
		return kind
	}
}

// ObjectContent returns the content of obj, which a template passes as a
// map (what the stores' accessors return) or an *unstructured.Unstructured.
func ObjectContent(obj any) (map[string]any, bool) {
	switch o := obj.(type) {
	case map[string]any:
		return o, o != nil
	case *unstructured.Unstructured:
		if o == nil || o.Object == nil {
			return nil, false
		}
		return o.Object, true
	default:
		return nil, false
	}
}

// scalarString formats a scalar value as a string; ok is false for maps,
// lists and other compound values, whose kind is then returned in s.
func scalarString(v any) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	case fmt.Stringer:
		return x.String(), true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Struct:
		return "a map", false
	case reflect.Slice, reflect.Array:
		return "a list", false
	case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return "not a plain value", false
	default:
		return fmt.Sprint(v), true
	}
}

// charName names the character r in a message.
func charName(r rune) string {
	switch r {
	case '\n':
		return "a newline"
	case '\r':
		return "a carriage return"
	case 0:
		return "a NUL byte"
	case '\t':
		return "a tab"
	case ' ':
		return "a space"
	case '#':
		return "a '#'"
	case '"':
		return "a double quote"
	case '\'':
		return "a single quote"
	case '\\':
		return "a backslash"
	case '$':
		return "a '$'"
	}
	if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
		return fmt.Sprintf("a control character (%U)", r)
	}
	return fmt.Sprintf("whitespace (%U)", r)
}

// valueUse is how a helper's result is placed in the configuration.
type valueUse uint8

const (
	// useText: safe and field, text placed as the template wrote it.
	useText valueUse = iota
	// useWord: word, one unquoted HAProxy word.
	useWord
	// useQuoted: quoteValue, escaped inside double quotes.
	useQuoted
)

// checkValue refuses in s what HAProxy would not read as written: control
// characters always; for text and words also leading or trailing
// whitespace (HAProxy drops it) and an environment reference ("$NAME",
// "${", "$." expand inside double quotes); for a word also an empty value
// (it vanishes and shifts the following arguments), any whitespace, '#'
// (comment), quotes, backslashes and any '$' (addresses expand every '$').
func checkValue(s string, o valueOrigin, use valueUse) *Error {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return o.errorf(s, "contains "+charName(r)+refuseSuffix)
		}
		if use == useWord && (unicode.IsSpace(r) || r == '#' || r == '"' || r == '\'' || r == '\\' || r == '$') {
			return o.errorf(s, "contains "+charName(r)+", which cannot be part of a single HAProxy word"+refuseSuffix)
		}
	}
	switch {
	case use == useQuoted:
		return nil
	case use == useWord && s == "":
		return o.errorf(s, "is empty, which is no HAProxy word"+refuseSuffix)
	case edgeSpace(s):
		return o.errorf(s, "starts or ends with whitespace, which HAProxy drops"+refuseSuffix)
	}
	// An environment reference in a safe or field value is judged where it
	// lands: the policy's tokenizer knows the quoting around it (HAProxy
	// expands "$NAME" but not '$NAME'), and refuses the expansion.
	return nil
}

// edgeSpace reports whether s starts or ends with whitespace.
func edgeSpace(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && (unicode.IsSpace(first) || unicode.IsSpace(last))
}

// valueArgs splits the arguments of safe, word and quoteValue: VALUE
// [OBJ [PATH]] as called directly, or OBJ PATH VALUE as the end of a pipeline
// ({{ $v | safe $ing "spec.rules[0].host" }}). OBJ is an object (whose kind
// and name the message uses) or a string naming the value.
func valueArgs(fn string, args []any) (v any, o valueOrigin, err error) {
	describeCtx := func(ctx ...any) error {
		for i, c := range ctx {
			if obj, ok := ObjectContent(c); ok {
				o.obj = obj
				continue
			}
			s, isString := c.(string)
			switch {
			case isString && i == len(ctx)-1:
				o.field = s
			case c == nil:
				// an absent object (e.g. a failed Get): no naming
			default:
				return fmt.Errorf("%s: argument %d must be an object or a field path, not %T", fn, i+2, c)
			}
		}
		return nil
	}
	switch len(args) {
	case 1:
		return args[0], o, nil
	case 2:
		if _, isObj := ObjectContent(args[0]); isObj {
			return args[1], o, describeCtx(args[0])
		}
		return args[0], o, describeCtx(args[1])
	case 3:
		if _, isObj := ObjectContent(args[0]); isObj {
			return args[2], o, describeCtx(args[0], args[1])
		}
		return args[0], o, describeCtx(args[1], args[2])
	default:
		return nil, o, fmt.Errorf("%s: want VALUE [OBJECT FIELD], got %d arguments", fn, len(args))
	}
}

// stringValue converts v to a string and checks it for use.
func stringValue(v any, o valueOrigin, use valueUse) (string, error) {
	s, ok := scalarString(v)
	if !ok {
		o = o.named()
		name := "value"
		switch {
		case o.object != "" && o.field != "":
			name = o.object + ": " + o.field
		case o.object != "":
			name = o.object + ": value"
		case o.field != "":
			name = o.field
		}
		return "", &Error{Object: o.object, Field: o.field, Message: name + " is " + s + ", not a single value"}
	}
	if err := checkValue(s, o, use); err != nil {
		return "", err
	}
	return s, nil
}

// Field returns the value at path in obj as a checked string; parse
// compiles path.
func Field(obj any, path string, parse func(string) (store.FieldPath, error)) (string, error) {
	content, ok := ObjectContent(obj)
	if !ok {
		if obj == nil || reflect.ValueOf(obj).IsZero() {
			return "", fmt.Errorf("field %q: the object is missing (nil)", path)
		}
		return "", fmt.Errorf("field %q: want an object, got %T", path, obj)
	}
	steps, err := parse(path)
	if err != nil {
		return "", fmt.Errorf("field %q: %w", path, err)
	}
	v, found := steps.Lookup(content)
	if !found {
		return "", nil
	}
	s, isScalar := scalarString(v)
	if !isScalar {
		object := describeObject(content)
		return "", &Error{Object: object, Field: path,
			Message: fmt.Sprintf("%s: %s is %s, not a single value", object, path, s)}
	}
	if verr := checkValue(s, valueOrigin{obj: content, field: path}, useText); verr != nil {
		return "", verr
	}
	return s, nil
}

// Safe implements safe VALUE [OBJ PATH]: VALUE as a string that carries
// no control character, edge whitespace or environment reference.
func Safe(args ...any) (string, error) {
	v, o, err := valueArgs("safe", args)
	if err != nil {
		return "", err
	}
	return stringValue(v, o, useText)
}

// Word implements word VALUE [OBJ PATH]: VALUE as one unquoted HAProxy
// word.
func Word(args ...any) (string, error) {
	v, o, err := valueArgs("word", args)
	if err != nil {
		return "", err
	}
	return stringValue(v, o, useWord)
}

// QuoteValue implements quoteValue VALUE [OBJ PATH]: an HAProxy
// double-quoted string. Inside double quotes HAProxy still interprets '\'
// escapes and expands environment variables ("$VAR", "${VAR}"), so '\', '"'
// and '$' are escaped with a backslash.
func QuoteValue(args ...any) (string, error) {
	v, o, err := valueArgs("quoteValue", args)
	if err != nil {
		return "", err
	}
	s, err := stringValue(v, o, useQuoted)
	if err != nil {
		return "", err
	}
	return `"` + haproxyQuoteEscaper.Replace(s) + `"`, nil
}

// haproxyQuoteEscaper escapes the characters HAProxy interprets inside
// double quotes. It is safe for concurrent use and never modified.
var haproxyQuoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
