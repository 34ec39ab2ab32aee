package render

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/render/funcs"
)

// Why each function a template can call reads neither the clock, the
// process environment, randomness nor the host: its result is a function
// of its arguments (and, for htc's own, of the render's stores, spec and
// BaseDir, which every render of one pipeline shares). Read from sprig
// v3.3.0's source and text/template's.
const (
	ofStrings  = "a function of its string arguments (package strings, strconv, xstrings, goutils)"
	ofNumbers  = "arithmetic on its arguments (int64, or shopspring/decimal for the f variants)"
	ofLists    = "builds its result from its arguments, by reflection over lists and maps"
	ofHashes   = "a checksum or encoding of its argument"
	ofRegexp   = "Go's regexp (RE2) over its arguments"
	ofPath     = "package path (slash-separated, whatever the host)"
	ofOSPath   = "package path: htc maps sprig's filepath (the host's separator) to it"
	ofJSON     = "encoding/json of its argument (maps in key order)"
	ofTypes    = "reflection over its arguments' Go types (the same in every view: TestValuesPrintAlikeInEveryView)"
	ofLogic    = "text/template's builtin over its arguments"
	ofGuarded  = "htc's: sprig's or text/template's function with the render's deadline and budget checks (package funcs, guarded.go); " + ofLists
	ofPrinting = "htc's: fmt over its arguments; refuses what prints as an address (package funcs, printf.go)"
	ofOwned    = "htc's: sprig's function whose result maps the render owns (state.go); " + ofLists
	ofHelpers  = "htc's: a function of its arguments (package values)"
	ofRender   = "htc's: reads the render's own state: its stores, spec, BaseDir, channels or files, never the host"
)

// allowedFuncs is every function a template can call, with why.
var allowedFuncs = map[string]string{
	// sprig: strings
	"abbrev": ofStrings, "abbrevboth": ofStrings, "trunc": ofStrings, "trim": ofStrings, "upper": ofStrings,
	"lower": ofStrings, "title": ofStrings, "untitle": ofStrings, "substr": ofStrings, "trimall": ofStrings,
	"trimAll": ofStrings, "trimSuffix": ofStrings, "trimPrefix": ofStrings, "nospace": ofStrings, "initials": ofStrings,
	"swapcase": ofStrings, "snakecase": ofStrings, "camelcase": ofStrings, "kebabcase": ofStrings, "wrap": ofStrings,
	"wrapWith": ofStrings, "contains": ofStrings, "hasPrefix": ofStrings, "hasSuffix": ofStrings, "plural": ofStrings,
	"quote": ofStrings + "; non-strings through fmt's %v", "squote": ofStrings + "; non-strings through fmt's %v",
	"toString": ofStrings + "; non-strings through fmt's %v", "toStrings": ofLists + "; elements through fmt's %v",
	"atoi": ofStrings + " (an int: 64 bits on every platform htc is built for)", "split": ofStrings, "splitn": ofStrings,
	"hello":     "a constant",
	"duration":  "formats a number of seconds as a time.Duration: no clock",
	"semver":    "parses its argument (Masterminds/semver); a *Version prints by its String method, printf refuses it below a list or map",
	"toDecimal": ofStrings, "semverCompare": "parses and compares its arguments (Masterminds/semver)",
	"durationRound":   "htc's: sprig's rounding of a duration (a string or nanoseconds); a time, whose age the clock decides, is refused (package funcs, static.go)",
	"derivePassword":  "scrypt of its arguments (deterministic; slow: about a second and 32 MiB a call, between two deadline checks)",
	"buildCustomCert": "decodes its base64 arguments into a struct of two strings", "decryptAES": "AES-CBC decryption of its arguments with the IV they carry",
	// sprig: numbers
	"add1": ofNumbers, "add": ofNumbers, "sub": ofNumbers, "div": ofNumbers, "mod": ofNumbers, "mul": ofNumbers,
	"add1f": ofNumbers, "addf": ofNumbers, "subf": ofNumbers, "divf": ofNumbers, "mulf": ofNumbers,
	"biggest": ofNumbers, "max": ofNumbers, "min": ofNumbers, "maxf": ofNumbers, "minf": ofNumbers,
	"ceil": ofNumbers, "floor": ofNumbers, "round": ofNumbers,
	"int64": ofNumbers, "int": ofNumbers + " (64 bits on every platform htc is built for)", "float64": ofNumbers,
	// sprig: defaults, conversions, reflection
	"default": ofLists, "empty": ofLists, "coalesce": ofLists, "all": ofLists, "any": ofLists, "compact": ofLists,
	"mustCompact": ofLists, "ternary": ofLists,
	"toJson": ofJSON, "toPrettyJson": ofJSON, "toRawJson": ofJSON, "mustToJson": ofJSON, "mustToPrettyJson": ofJSON, "mustToRawJson": ofJSON,
	"typeOf": ofTypes, "typeIs": ofTypes, "typeIsLike": ofTypes, "kindOf": ofTypes, "kindIs": ofTypes, "deepEqual": ofTypes,
	// sprig: paths and encodings
	"base": ofPath, "dir": ofPath, "clean": ofPath, "ext": ofPath, "isAbs": ofPath,
	"osBase": ofOSPath, "osClean": ofOSPath, "osDir": ofOSPath, "osExt": ofOSPath, "osIsAbs": ofOSPath,
	"b64enc": ofHashes, "b64dec": ofHashes, "b32enc": ofHashes, "b32dec": ofHashes,
	"sha1sum": ofHashes, "sha256sum": ofHashes, "sha512sum": ofHashes, "adler32sum": ofHashes,
	// sprig: lists and dicts
	"get": ofLists, "hasKey": ofLists, "pluck": ofLists, "first": ofLists, "mustFirst": ofLists, "rest": ofLists,
	"mustRest": ofLists, "last": ofLists, "mustLast": ofLists, "initial": ofLists, "mustInitial": ofLists,
	"reverse": ofLists, "mustReverse": ofLists, "without": ofLists, "mustWithout": ofLists, "has": ofLists,
	"mustHas": ofLists, "slice": ofLists, "mustSlice": ofLists, "dig": ofLists, "chunk": ofLists, "mustChunk": ofLists,
	"urlJoin": ofStrings + " (net/url)",
	// sprig: regular expressions
	"regexMatch": ofRegexp, "mustRegexMatch": ofRegexp, "regexFindAll": ofRegexp, "mustRegexFindAll": ofRegexp,
	"regexFind": ofRegexp, "mustRegexFind": ofRegexp, "regexSplit": ofRegexp, "mustRegexSplit": ofRegexp,
	"regexQuoteMeta": ofRegexp,
	// htc's versions of sprig's and text/template's functions
	"keys": "htc's: sprig's keys, sorted (sprig's order is random)", "values": "htc's: sprig's values, in key order (sprig's order is random)",
	"list": ofGuarded, "tuple": ofGuarded, "append": ofGuarded, "push": ofGuarded, "mustAppend": ofGuarded,
	"mustPush": ofGuarded, "prepend": ofGuarded, "mustPrepend": ofGuarded, "concat": ofGuarded, "until": ofGuarded,
	"untilStep": ofGuarded, "seq": ofGuarded, "uniq": ofGuarded, "mustUniq": ofGuarded, "cat": ofGuarded,
	"repeat": ofGuarded, "join": ofGuarded, "indent": ofGuarded, "nindent": ofGuarded, "replace": ofGuarded,
	"splitList": ofGuarded, "sortAlpha": ofGuarded, "regexReplaceAll": ofGuarded, "regexReplaceAllLiteral": ofGuarded,
	"mustRegexReplaceAll": ofGuarded, "mustRegexReplaceAllLiteral": ofGuarded,
	"printf": ofPrinting, "print": ofPrinting, "println": ofPrinting,
	"dict": ofOwned, "deepCopy": ofOwned, "mustDeepCopy": ofOwned, "fromJson": ofOwned, "mustFromJson": ofOwned,
	"pick": ofOwned, "omit": ofOwned, "urlParse": ofOwned, "set": ofOwned, "unset": ofOwned, "merge": ofOwned,
	"mergeOverwrite": ofOwned, "mustMerge": ofOwned, "mustMergeOverwrite": ofOwned,
	// htc's own
	"fail": ofHelpers, "safe": ofHelpers, "word": ofHelpers, "quoteValue": ofHelpers, "field": ofHelpers,
	"regexCompiles": ofRegexp + " (package funcs, regex.go)",
	"ipAddr":        "htc's: parses its argument with net/netip (package funcs, netaddr.go)", "cidrContains": "htc's: net/netip over its arguments (package funcs, netaddr.go)",
	// htc's for Gateway libraries
	"hostIntersect": ofStrings + " (package funcs, gateway.go)", "durationMs": "the gateway-api module's ParseDuration of its argument (package funcs, gateway.go)",
	"selectorMatches": "apimachinery's label selector over its arguments (package funcs, gateway.go)", "cidrHost": "k8s.io/utils/net over its arguments (package funcs, gateway.go)",
	"referenceGrantAllows": "the gateway-api module's ReferenceGrant type over its arguments (package funcs, gateway.go)",
	// htc's bound to the render
	"pathFor": ofRender + " (Input.BaseDir)", "each": ofRender + " (the source map)", "addFile": ofRender,
	"include": ofRender + " (its templates)", "includeValue": ofRender + " (its templates)", "result": ofRender + " (the includeValue call running)",
	"fragments": ofRender + " (its templates, records and stores)",
	"emit":      ofRender, "emitted": ofRender, "warn": ofRender + " (Bundle.Warnings)",
	// text/template's builtins
	"and": ofLogic, "or": ofLogic, "not": ofLogic, "len": ofLogic, "index": ofLogic, "eq": ofLogic, "ne": ofLogic,
	"lt": ofLogic, "le": ofLogic, "gt": ofLogic, "ge": ofLogic,
	"html": ofLogic + " (fmt's %v of non-strings)", "js": ofLogic + " (fmt's %v of non-strings)", "urlquery": ofLogic + " (fmt's %v of non-strings)",
	"call": ofLogic + ": calls a function value, and the only ones a template holds are the sequences Each and each return",
}

// templateFuncs is every function a template can call: text/template's
// builtins (read from its source, so that a new Go release's are seen)
// and the functions New gives every template.
func templateFuncs(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, n := range textTemplateBuiltins(t) {
		names[n] = true
	}
	st := newRenderState(nil, "")
	for _, m := range []template.FuncMap{staticFuncs, dynamicFuncs(st), guardedFuncs(st)} {
		for n := range m {
			names[n] = true
		}
	}
	return names
}

// textTemplateBuiltins returns the names text/template's builtins() maps.
func textTemplateBuiltins(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	file := filepath.Join(strings.TrimSpace(string(out)), "src", "text", "template", "funcs.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err, "text/template's source is where its builtins are listed")
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "builtins" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					name, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					names = append(names, name)
				}
			}
			return true
		})
		return false
	})
	require.Contains(t, names, "printf", "text/template's builtins() was not found in %s", file)
	return names
}

// TestEveryFunctionIsAllowedForAReason fails on a function a template can
// call that is not in allowedFuncs, as a new sprig version or Go release
// adding one would: read its source, then allow it with its reason or
// add it to removedFuncs (package funcs).
func TestEveryFunctionIsAllowedForAReason(t *testing.T) {
	callable := templateFuncs(t)
	for _, name := range slices.Sorted(maps.Keys(callable)) {
		assert.NotEmpty(t, allowedFuncs[name], "%s: a template can call it, but no reason says it reads neither the clock, the environment, randomness nor the host", name)
	}
	for name := range allowedFuncs {
		assert.True(t, callable[name], "%s is allowed but no template can call it", name)
	}
	for _, name := range funcs.Removed() {
		assert.False(t, callable[name], "%s is removed", name)
		assert.Contains(t, sprig.TxtFuncMap(), name, "%s: removed, but sprig has no such function", name)
	}
	for name := range sprig.TxtFuncMap() {
		assert.True(t, callable[name] || slices.Contains(funcs.Removed(), name), "sprig's %s is neither allowed nor removed", name)
	}
}

// TestNoFunctionReadsTheClock: what read the clock or the host's time zone
// does not parse (toDate, the one way to make a time, among them), and
// durationRound, sprig's age of a time, refuses one.
func TestNoFunctionReadsTheClock(t *testing.T) {
	for _, tmpl := range []string{
		`{{ durationRound (toDate "2006-01-02" "2020-01-01") }}`,
		`{{ unixEpoch (mustToDate "2006" "2020") }}`,
		`{{ now }}`, `{{ ago 0 }}`, `{{ date "2006" 0 }}`, `{{ mustDateModify "1h" 0 }}`,
	} {
		_, err := New(newSpec(tmpl))
		assert.ErrorContains(t, err, "not defined", tmpl)
	}
	round := staticFuncs["durationRound"].(func(any) (string, error))
	_, err := round(time.Now().Add(-time.Minute))
	assert.ErrorContains(t, err, "clock")
	got, err := round("90s")
	require.NoError(t, err)
	assert.Equal(t, "1m", got)
}

// TestOSPathFunctionsAreThePathOnes: sprig's os* functions follow the
// host's path separator; htc's are package path's, so that htc render on
// any system renders what the controller does.
func TestOSPathFunctionsAreThePathOnes(t *testing.T) {
	for os, p := range map[string]string{"osBase": "base", "osClean": "clean", "osDir": "dir", "osExt": "ext", "osIsAbs": "isAbs"} {
		assert.Equal(t, reflect.ValueOf(staticFuncs[p]).Pointer(), reflect.ValueOf(staticFuncs[os]).Pointer(), os)
	}
}
