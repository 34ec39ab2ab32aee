package reads

import (
	"maps"
	"slices"
)

// rule follows one call of a function: what the call reads of its
// arguments, and which of their values its result may carry. A rule that
// returns nil could not follow this call (a malformed one, which fails at
// render time): the call then uses every argument whole and returns
// nothing from the stores, as usesArgs does.
type rule func(s *readScan, c callSite) *absValue

// rules is how the scan follows a call of each function a template can
// call (text/template's builtins and every function package render gives
// templates): TestEveryFunctionHasAReadRule (package render) fails on a
// function without one. A call of a function not here makes the scan give
// up (Set.Everything): it fails closed.
//
// The functions with a rule of their own carry their arguments into their
// result (dict, list, set, get, index, default, and, or, each), read less
// than their arguments whole (hasKey, field, not, addFile, and warn and
// fail, whose OBJECT is named, not read), run templates
// (include, includeValue, fragments) or hold values for later (emit,
// emitted, result). Every
// other function is usesArgs: what it returns can only be made of what it
// was given, so it reads its arguments whole and its result carries
// nothing from the stores.
var rules = map[string]rule{
	// built maps and lists: the values they hold are followed
	"dict": (*readScan).dict, "list": builtList, "tuple": builtList, "set": setRule,
	// lookups: a constant key is a field
	"get": indexRule, "index": indexRule, "hasKey": hasKeyRule, "field": (*readScan).fieldCall,
	// tests: return one of their arguments, chosen by testing them
	"default": testedOneOf, "and": testedOneOf, "or": testedOneOf, "not": notRule,
	// the source map: an owner is named, not read
	"addFile": addFileRule, "each": eachRule, "warn": ownerRule, "fail": ownerRule,
	// templates run with a dot the scan follows
	"include": (*readScan).include, "fragments": (*readScan).fragmentsCall,
	// a snippet's value: what result gives is what includeValue returns
	"includeValue": (*readScan).includeValue, "result": resultRule,
	// channels: what emit puts in is what emitted returns
	"emit": emitRule, "emitted": emittedRule,
	// everything else: made of its arguments
	"abbrev": usesArgs, "abbrevboth": usesArgs, "add": usesArgs, "add1": usesArgs, "add1f": usesArgs, "addf": usesArgs,
	"adler32sum": usesArgs, "all": usesArgs, "any": usesArgs, "append": usesArgs, "atoi": usesArgs, "b32dec": usesArgs,
	"b32enc": usesArgs, "b64dec": usesArgs, "b64enc": usesArgs, "base": usesArgs, "biggest": usesArgs, "buildCustomCert": usesArgs,
	"call": usesArgs, "camelcase": usesArgs, "cat": usesArgs, "ceil": usesArgs, "chunk": usesArgs, "cidrContains": usesArgs,
	"clean": usesArgs, "coalesce": usesArgs, "compact": usesArgs, "concat": usesArgs, "contains": usesArgs, "decryptAES": usesArgs,
	"deepCopy": usesArgs, "deepEqual": usesArgs, "derivePassword": usesArgs, "dig": usesArgs, "dir": usesArgs, "div": usesArgs,
	"divf": usesArgs, "duration": usesArgs, "durationRound": usesArgs, "empty": usesArgs, "eq": usesArgs, "ext": usesArgs,
	"first": usesArgs, "float64": usesArgs, "floor": usesArgs, "fromJson": usesArgs, "ge": usesArgs,
	"gt": usesArgs, "has": usesArgs, "hasPrefix": usesArgs, "hasSuffix": usesArgs, "hello": usesArgs, "html": usesArgs,
	"indent": usesArgs, "initial": usesArgs, "initials": usesArgs, "int": usesArgs, "int64": usesArgs, "ipAddr": usesArgs,
	"isAbs": usesArgs, "join": usesArgs, "js": usesArgs, "kebabcase": usesArgs, "keys": usesArgs, "kindIs": usesArgs,
	"kindOf": usesArgs, "last": usesArgs, "le": usesArgs, "len": usesArgs, "lower": usesArgs, "lt": usesArgs,
	"max": usesArgs, "maxf": usesArgs, "merge": usesArgs, "mergeOverwrite": usesArgs, "min": usesArgs, "minf": usesArgs,
	"mod": usesArgs, "mul": usesArgs, "mulf": usesArgs, "mustAppend": usesArgs, "mustChunk": usesArgs, "mustCompact": usesArgs,
	"mustDeepCopy": usesArgs, "mustFirst": usesArgs, "mustFromJson": usesArgs, "mustHas": usesArgs, "mustInitial": usesArgs, "mustLast": usesArgs,
	"mustMerge": usesArgs, "mustMergeOverwrite": usesArgs, "mustPrepend": usesArgs, "mustPush": usesArgs, "mustRegexFind": usesArgs, "mustRegexFindAll": usesArgs,
	"mustRegexMatch": usesArgs, "mustRegexReplaceAll": usesArgs, "mustRegexReplaceAllLiteral": usesArgs, "mustRegexSplit": usesArgs, "mustRest": usesArgs, "mustReverse": usesArgs,
	"mustSlice": usesArgs, "mustToJson": usesArgs, "mustToPrettyJson": usesArgs, "mustToRawJson": usesArgs, "mustUniq": usesArgs, "mustWithout": usesArgs,
	"ne": usesArgs, "nindent": usesArgs, "nospace": usesArgs, "omit": usesArgs, "osBase": usesArgs, "osClean": usesArgs,
	"osDir": usesArgs, "osExt": usesArgs, "osIsAbs": usesArgs, "pathFor": usesArgs, "pick": usesArgs, "pluck": usesArgs,
	"plural": usesArgs, "prepend": usesArgs, "print": usesArgs, "printf": usesArgs, "println": usesArgs, "push": usesArgs,
	"quote": usesArgs, "quoteValue": usesArgs, "regexCompiles": usesArgs, "regexFind": usesArgs, "regexFindAll": usesArgs, "regexMatch": usesArgs,
	"regexQuoteMeta": usesArgs, "regexReplaceAll": usesArgs, "regexReplaceAllLiteral": usesArgs, "regexSplit": usesArgs, "repeat": usesArgs, "replace": usesArgs,
	"rest": usesArgs, "reverse": usesArgs, "round": usesArgs, "safe": usesArgs, "semver": usesArgs, "semverCompare": usesArgs,
	"seq": usesArgs, "sha1sum": usesArgs, "sha256sum": usesArgs, "sha512sum": usesArgs, "slice": usesArgs, "snakecase": usesArgs,
	"sortAlpha": usesArgs, "split": usesArgs, "splitList": usesArgs, "splitn": usesArgs, "squote": usesArgs, "sub": usesArgs,
	"subf": usesArgs, "substr": usesArgs, "swapcase": usesArgs, "ternary": usesArgs, "title": usesArgs, "toDecimal": usesArgs,
	"toJson": usesArgs, "toPrettyJson": usesArgs, "toRawJson": usesArgs, "toString": usesArgs, "toStrings": usesArgs, "trim": usesArgs,
	"trimAll": usesArgs, "trimPrefix": usesArgs, "trimSuffix": usesArgs, "trimall": usesArgs, "trunc": usesArgs, "typeIs": usesArgs,
	"typeIsLike": usesArgs, "typeOf": usesArgs, "uniq": usesArgs, "unset": usesArgs, "until": usesArgs, "untilStep": usesArgs,
	"untitle": usesArgs, "upper": usesArgs, "urlJoin": usesArgs, "urlParse": usesArgs, "urlquery": usesArgs, "values": usesArgs,
	"without": usesArgs,
	// the Gateway API's (package funcs, gateway.go): made of their arguments too
	"hostIntersect": usesArgs, "selectorMatches": usesArgs, "durationMs": usesArgs, "cidrHost": usesArgs,
	"referenceGrantAllows": usesArgs, "word": usesArgs, "wrap": usesArgs, "wrapWith": usesArgs,
}

// usesArgs is the rule of a function whose result is made of its
// arguments: they are used whole, and the result carries nothing from the
// stores.
func usesArgs(s *readScan, c callSite) *absValue {
	for _, a := range c.args {
		s.use(a)
	}
	return &absValue{}
}

// ownerRule: warn and fail take MESSAGE, or OBJECT MESSAGE; OBJECT only
// names the object (see owner).
func ownerRule(s *readScan, c callSite) *absValue {
	if len(c.args) != 2 {
		return nil
	}
	s.owner(c.args[0])
	s.use(c.args[1])
	return &absValue{}
}

// builtList: list and tuple build a list holding their arguments.
func builtList(s *readScan, c callSite) *absValue {
	n := s.node(c.site)
	for _, a := range c.args {
		s.setIn(n, "", false, a)
	}
	return &absValue{nodes: set(n)}
}

// setRule: set D K V holds V in D and returns D.
func setRule(s *readScan, c callSite) *absValue {
	if len(c.args) != 3 {
		return nil
	}
	s.setKey(c.args[0], c.args[1], c.args[2], c.nodes)
	return c.args[0]
}

// indexRule: get D K and index D K1 K2... (see index).
func indexRule(s *readScan, c callSite) *absValue {
	if len(c.args) < 1 || len(c.nodes) != len(c.args) {
		return nil
	}
	return s.index(c.args[0], c.nodes[1:len(c.args)], c.args[1:])
}

// hasKeyRule: hasKey D K reads whether the key is there.
func hasKeyRule(s *readScan, c callSite) *absValue {
	if len(c.args) != 2 {
		return nil
	}
	s.hasKey(c.args[0], c.args[1], c.nodes)
	return &absValue{}
}

// testedOneOf: default, and and or each return one of their arguments,
// chosen by testing them.
func testedOneOf(s *readScan, c callSite) *absValue {
	v := &absValue{}
	for _, a := range c.args {
		s.test(a)
		v.join(a)
	}
	return v
}

// notRule: not tests its arguments.
func notRule(s *readScan, c callSite) *absValue {
	for _, a := range c.args {
		s.test(a)
	}
	return &absValue{}
}

// addFileRule: an owner (the fourth argument on) names a store object in
// the source map by its kind, namespace and name: no field is read.
func addFileRule(s *readScan, c callSite) *absValue {
	for _, a := range c.args[:min(len(c.args), 3)] {
		s.use(a)
	}
	return &absValue{}
}

// eachRule: each SEQ returns SEQ as a sequence the source map follows.
func eachRule(_ *readScan, c callSite) *absValue {
	if len(c.args) != 1 {
		return nil
	}
	return c.args[0]
}

// resultRule: result VALUE holds VALUE for includeValue of the template
// being scanned (see returnedBy).
func resultRule(s *readScan, c callSite) *absValue {
	if len(c.args) != 1 {
		return nil
	}
	v := s.returned[s.current]
	if v == nil {
		v = &absValue{}
		s.returned[s.current] = v
	}
	if v.join(c.args[0]) {
		s.grew = true
	}
	return &absValue{}
}

// emitRule: emit CHANNEL KEY VALUE uses the channel and the key; the
// value is held by the channels, which emitted returns.
func emitRule(s *readScan, c callSite) *absValue {
	if len(c.args) != 3 {
		return nil
	}
	s.use(c.args[0])
	s.use(c.args[1])
	s.setIn(s.emitted, "", false, c.args[2])
	return &absValue{}
}

// emittedRule: emitted CHANNEL [PREFIX] returns what emit held.
func emittedRule(s *readScan, c callSite) *absValue {
	for _, a := range c.args {
		s.use(a)
	}
	return &absValue{nodes: set(s.emitted)}
}

// HasRule reports whether the scan has a rule for function name (see
// rules): a template calling one without makes it give up.
func HasRule(name string) bool { return rules[name] != nil }

// Functions lists the functions the scan has a rule for.
func Functions() []string { return slices.Sorted(maps.Keys(rules)) }
