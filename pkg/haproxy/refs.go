package haproxy

import (
	"strings"
)

// refsOf lists the path arguments of one configuration line whose first
// keyword (lower-cased, after "no"/"default") is kw and whose remaining words
// are args.
//
// Covered: global file and directory directives (lua-*, ssl-dh-param-file,
// h1-case-adjust-file, 51degrees/wurfl/deviceatlas data files,
// httpclient.ssl.ca-file, issuers-chain-path, ca-base, crt-base, key-base,
// server-state-base, server-state-file, chroot, pidfile, default-path,
// stats socket, unix-bind prefix), proxy directives (errorfile,
// server-state-file-name), bind/server/default-server/server-template
// addresses that are unix socket paths and their crt, crt-list, ca-file,
// ca-verify-file, crl-file, ca-sign-file and tls-ticket-keys options, the
// file/lf-file/errorfile arguments of http-request/http-response/
// http-after-response return and http-error, `filter ... config <file>`,
// ACL pattern files (`-f <file>` anywhere on a line) and the file argument of
// the map*() converters and set-map/del-map/add-acl/del-acl actions.
//
// Not covered, on purpose: `log` targets (syslog destinations, commonly
// /dev/log; HAProxy only sends datagrams to them at run time), "abns@"
// abstract sockets and "fd@"/"sockpair@" inherited descriptors.
func refsOf(kw string, args []string) []fileRef {
	var refs []fileRef
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	one := func(mode refMode, base baseKind) {
		if p := arg(0); p != "" {
			refs = append(refs, fileRef{directive: kw, path: p, mode: mode, base: base})
		}
	}
	switch kw {
	case "lua-load", "lua-load-per-thread", "ssl-dh-param-file", "h1-case-adjust-file",
		"51degrees-data-file", "wurfl-data-file", "deviceatlas-json-file",
		"httpclient.ssl.ca-file", "issuers-chain-path", "ssl-provider-path":
		one(refRead, baseNone)
	case "lua-prepend-path":
		// The argument is a search pattern such as /etc/haproxy/lua/?.lua.
		if p := arg(0); p != "" {
			refs = append(refs, fileRef{directive: kw, path: dirOfPattern(p), mode: refRead})
		}
	case "ca-base", "crt-base", "key-base", "server-state-base":
		one(refRead, baseNone)
	case "server-state-file":
		one(refRead, baseServerState)
	case "chroot", "pidfile":
		one(refWrite, baseNone)
	case "default-path":
		switch arg(0) {
		case "origin":
			if p := arg(1); p != "" {
				refs = append(refs, fileRef{directive: kw, path: p, mode: refRead})
			}
		case "parent":
			refs = append(refs, fileRef{directive: kw, path: "..", mode: refRead})
		}
	case "unix-bind":
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "prefix" {
				refs = append(refs, fileRef{directive: kw, path: args[i+1], mode: refWrite})
			}
		}
	case "stats":
		if strings.ToLower(arg(0)) == "socket" && len(args) > 1 {
			refs = append(refs, addressRefs("stats socket", args[1], refWrite)...)
			refs = append(refs, sslOptionRefs(args[2:])...)
		}
	case "errorfile":
		if p := arg(1); p != "" {
			refs = append(refs, fileRef{directive: kw, path: p, mode: refRead})
		}
	case "server-state-file-name":
		if p := arg(0); p != "" && p != "use-backend-name" {
			refs = append(refs, fileRef{directive: kw, path: p, mode: refRead, base: baseServerState})
		}
	case "bind":
		if len(args) > 0 {
			refs = append(refs, addressRefs(kw, args[0], refWrite)...)
			refs = append(refs, sslOptionRefs(args[1:])...)
		}
	case "server":
		if len(args) > 1 {
			refs = append(refs, addressRefs(kw, args[1], refRead)...)
			refs = append(refs, sslOptionRefs(args[2:])...)
		}
	case "server-template":
		if len(args) > 2 {
			refs = append(refs, addressRefs(kw, args[2], refRead)...)
			refs = append(refs, sslOptionRefs(args[3:])...)
		}
	case "default-server":
		refs = append(refs, sslOptionRefs(args)...)
	case "http-request", "http-response", "http-after-response", "http-error":
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "file", "lf-file", "errorfile":
				refs = append(refs, fileRef{directive: kw + " " + args[i], path: args[i+1], mode: refRead})
				i++
			}
		}
	case "filter":
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "config" {
				refs = append(refs, fileRef{directive: "filter config", path: args[i+1], mode: refRead})
			}
		}
	}
	for i, a := range args {
		if a == "-f" && i+1 < len(args) {
			refs = append(refs, fileRef{directive: "-f", path: args[i+1], mode: refRead})
		}
		refs = append(refs, converterRefs(a)...)
	}
	return refs
}

// sslFileOption reports whether a bind/server/crt-list option takes a file
// path as its value, and which base directory applies to it.
func sslFileOption(opt string) (baseKind, bool) {
	switch opt {
	case "crt", "crt-list":
		return baseCrt, true
	case "ca-file", "ca-verify-file", "crl-file", "ca-sign-file":
		return baseCA, true
	case "tls-ticket-keys":
		return baseNone, true
	}
	return baseNone, false
}

// sslOptionRefs lists the file options among bind or server options.
func sslOptionRefs(opts []string) []fileRef {
	var refs []fileRef
	for i := 0; i+1 < len(opts); i++ {
		if base, ok := sslFileOption(opts[i]); ok {
			refs = append(refs, fileRef{directive: opts[i], path: opts[i+1], mode: refRead, base: base, crtList: opts[i] == "crt-list"})
			i++
		}
	}
	return refs
}

// addressRefs lists the unix socket paths among a comma-separated list of
// addresses ("/path", "unix@path"); network addresses yield nothing.
func addressRefs(directive, addrs string, mode refMode) []fileRef {
	var refs []fileRef
	for _, a := range strings.Split(addrs, ",") {
		switch {
		case strings.HasPrefix(a, "unix@"):
			refs = append(refs, fileRef{directive: directive, path: strings.TrimPrefix(a, "unix@"), mode: mode})
		case strings.HasPrefix(a, "/"):
			refs = append(refs, fileRef{directive: directive, path: a, mode: mode})
		}
	}
	return refs
}

// converterRefs finds the file argument of map*() converters and of the
// set-map/del-map/add-acl/del-acl actions inside one word, e.g.
// %[req.hdr(host),lower,map_beg(/x/host.map,default)].
func converterRefs(word string) []fileRef {
	var refs []fileRef
	for i := 0; i < len(word); i++ {
		if word[i] != '(' {
			continue
		}
		j := i
		for j > 0 && isIdentByte(word[j-1]) {
			j--
		}
		name := strings.ToLower(word[j:i])
		if !fileFunction(name) {
			continue
		}
		end := i + 1
		var quote byte
		for end < len(word) {
			c := word[end]
			if quote != 0 {
				if c == quote {
					quote = 0
				}
			} else if c == '"' || c == '\'' {
				quote = c
			} else if c == ',' || c == ')' {
				break
			}
			end++
		}
		p := strings.Trim(word[i+1:end], "\"'")
		refs = append(refs, fileRef{directive: name + "()", path: p, mode: refRead})
	}
	return refs
}

// isIdentByte reports whether c can be part of a converter or action name.
func isIdentByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// fileFunction reports whether a converter or action named name takes a
// pattern file as its first argument.
func fileFunction(name string) bool {
	switch name {
	case "map", "set-map", "del-map", "add-acl", "del-acl":
		return true
	}
	return strings.HasPrefix(name, "map_")
}

// dirOfPattern returns the directory part of a Lua search pattern.
func dirOfPattern(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	if strings.HasPrefix(p, "/") {
		return "/"
	}
	return "."
}
