package policy

// The inventory classifies everything in an HAProxy 3.0 configuration that
// names a file, an address or code: directives, bind and server options,
// actions, converters, filters, address prefixes and the keywords of the
// files HAProxy reads on the configuration's behalf (crt-list, SPOE). Each
// entry cites the HAProxy 3.0 source that does the access. Everything the
// policy meets in such a position and cannot find here is denied. The
// method and the counts are in docs/policy-inventory.md.

// class says what HAProxy does with an argument.
type class uint8

const (
	// clsNone: a known name that neither names a file nor loads code.
	clsNone class = iota
	// clsRead: HAProxy reads the file (or every file of the directory).
	clsRead
	// clsDir: a directory later relative paths resolve against.
	clsDir
	// clsWrite: HAProxy creates, truncates, renames, removes or binds at
	// the path (or changes into it).
	clsWrite
	// clsAddr: an address, classified by its prefix (see addressClass).
	clsAddr
	// clsCode: loads or runs code (Lua, shared objects, programs).
	clsCode
	// clsEnv: reads or changes the process environment.
	clsEnv
	// clsPrivilege: forks, keeps capabilities or opens kernel objects
	// named by the configuration (network namespaces, descriptors).
	clsPrivilege
)

// String names the class in the inventory document and in tests.
func (c class) String() string {
	return [...]string{"none", "read", "dir", "write", "address", "loads-code", "env", "privilege"}[c]
}

// baseKind says which base directory applies to a relative path. HAProxy
// joins "<base>/<path>" for paths that start with neither '/' nor '@';
// without a base, a relative path is relative to the current directory,
// which default-path sets (the bundle directory while checking).
type baseKind uint8

const (
	baseNone baseKind = iota
	baseCA
	baseCrt
	baseKey
	baseServerState
)

// String names the base in the inventory document.
func (b baseKind) String() string {
	return [...]string{"cwd", "ca-base", "crt-base", "key-base", "server-state-base"}[b]
}

// entry is one row of the inventory.
type entry struct {
	// where is the place the name appears: "global", "proxy", a section
	// name, "bind", "server", "crt-list", "action", "converter", "fetch",
	// "filter", "reply", "prefix", "log-target", "special".
	where string
	// name is the keyword, option, function or prefix.
	name string
	// class is what HAProxy does with it.
	class class
	// base applies to relative paths of clsRead/clsWrite/clsDir entries.
	base baseKind
	// key is the AllowedDirectives entry that permits it; "" when the
	// class needs none (files and addresses follow the path rules) or when
	// nothing can permit it.
	key string
	// src is where HAProxy 3.0 does the access.
	src string
	// example is a configuration line using it; "%s" stands for the path
	// or address. The tests run every example.
	example string
}

// Keys of AllowedDirectives beyond directive names.
const (
	// KeyAbstractSocket permits abstract unix sockets (abns@), which reach
	// any local process's abstract socket.
	KeyAbstractSocket = "abns@"
	// KeyFD permits inherited file descriptors (fd@, sockpair@) other
	// than the standard output and error of log targets.
	KeyFD = "fd@"
	// KeyNamespace permits network namespaces: HAProxy opens
	// /var/run/netns/<name> while it parses.
	KeyNamespace = "namespace"
	// KeyOpenTracing permits the opentracing filter, which loads the
	// tracer plugins its configuration names.
	KeyOpenTracing = "opentracing"
	// KeySetcap permits setcap (keeping capabilities after setuid).
	KeySetcap = "setcap"
)
