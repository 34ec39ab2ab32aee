package policy

import (
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// handler checks the arguments of one keyword.
type handler func(s *policyScan, at loc, kw string, args []cfgtext.Word)

// entryKey is a place (a section list, "bind", "reply", ...) and a name
// in it: a map key built without concatenating strings on every line.
type entryKey struct{ where, name string }

// entries indexes the inventory by place and name.
var entries = func() map[entryKey]inventory.Entry {
	m := make(map[entryKey]inventory.Entry, len(inventory.Table))
	for _, e := range inventory.Table {
		m[entryKey{e.Where, e.Name}] = e
	}
	return m
}()

// lookupEntry finds the inventory entry of keyword kw in a section list.
func lookupEntry(section, kw string) (inventory.Entry, bool) {
	e, ok := entries[entryKey{section, kw}]
	return e, ok
}

// handlers maps "<section list> <keyword>" (or "* <keyword>" for every
// section) to the keywords whose arguments are not a single path.
var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"global default-path":          (*policyScan).defaultPath,
		"global unix-bind":             (*policyScan).unixBind,
		"global lua-prepend-path":      (*policyScan).luaPrependPath,
		"global lua-load":              (*policyScan).codeFile,
		"global lua-load-per-thread":   (*policyScan).codeFile,
		"global ssl-provider-path":     (*policyScan).codeFile,
		"global stats":                 (*policyScan).statsSocket,
		"global ca-base":               (*policyScan).setBase,
		"global crt-base":              (*policyScan).setBase,
		"global key-base":              (*policyScan).setBase,
		"global server-state-base":     (*policyScan).setBase,
		"crt-store crt-base":           (*policyScan).setBase,
		"crt-store key-base":           (*policyScan).setBase,
		"crt-store load":               (*policyScan).crtStoreLoad,
		"global wurfl-patch-file":      (*policyScan).pathList,
		"global ocsp-update.httpproxy": (*policyScan).connectAddr,
		"global httpclient.ssl.ca-file": func(s *policyScan, at loc, kw string, args []cfgtext.Word) {
			s.caFile(at, kw, arg(args, 0), inventory.BaseNone)
		},
		"* log":                        (*policyScan).logLine,
		"fcgi-app log-stderr":          (*policyScan).logLine,
		"* bind":                       (*policyScan).bindLine,
		"log-forward dgram-bind":       (*policyScan).bindLine,
		"peers default-bind":           (*policyScan).defaultBind,
		"* server":                     (*policyScan).serverLine,
		"peers peer":                   (*policyScan).serverLine,
		"proxy server-template":        (*policyScan).serverTemplate,
		"* default-server":             (*policyScan).defaultServer,
		"resolvers nameserver":         (*policyScan).serverLine,
		"mailers mailer":               (*policyScan).mailer,
		"proxy dispatch":               (*policyScan).connectAddr,
		"proxy source":                 (*policyScan).sourceLine,
		"proxy http-request":           (*policyScan).httpRule,
		"proxy http-response":          (*policyScan).httpRule,
		"proxy http-after-response":    (*policyScan).httpRule,
		"proxy http-error":             (*policyScan).replyOptions,
		"proxy tcp-check":              (*policyScan).checkConnect,
		"proxy http-check":             (*policyScan).checkConnect,
		"proxy option":                 (*policyScan).optionLine,
		"proxy external-check":         (*policyScan).externalCheck,
		"proxy filter":                 (*policyScan).filter,
		"proxy server-state-file-name": (*policyScan).serverStateFileName,
	}
	handlerIndex = make(map[entryKey]handler, len(handlers))
	for k, h := range handlers {
		where, name, _ := strings.Cut(k, " ")
		handlerIndex[entryKey{where, name}] = h
	}
}

// handlerIndex is handlers by place and keyword.
var handlerIndex map[entryKey]handler

// handlerFor returns the handler of kw in a section: a custom one, else
// the single path argument the inventory example shows.
func handlerFor(section, kw string) handler {
	if h := handlerIndex[entryKey{section, kw}]; h != nil {
		return h
	}
	if h := handlerIndex[entryKey{"*", kw}]; h != nil {
		return h
	}
	e, ok := lookupEntry(section, kw)
	if !ok || e.Example == "" || (e.Class != inventory.ClassRead && e.Class != inventory.ClassWrite && e.Class != inventory.ClassDir) {
		return nil
	}
	idx := exampleArg(e.Example)
	return func(s *policyScan, at loc, kw string, args []cfgtext.Word) {
		if idx >= 0 && idx < len(args) {
			s.checkPath(at, kw, args[idx], e)
		}
	}
}

// exampleArg is the argument index (after the keyword) of "%s" in an
// inventory example, -1 when none.
func exampleArg(example string) int {
	for i, w := range strings.Fields(example) {
		if strings.Contains(w, "%s") {
			return i - 1
		}
	}
	return -1
}

// arg returns args[i] or an empty word.
func arg(args []cfgtext.Word, i int) cfgtext.Word {
	if i < len(args) {
		return args[i]
	}
	return cfgtext.Word{}
}
