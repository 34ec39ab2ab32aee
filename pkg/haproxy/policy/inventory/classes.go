package inventory

// The inventory classifies everything in an HAProxy 3.0 configuration that
// names a file, an address or code: directives, bind and server options,
// actions, converters, filters, address prefixes and the keywords of the
// files HAProxy reads on the configuration's behalf (crt-list, SPOE). Each
// Entry cites the HAProxy 3.0 source that does the access. Everything the
// policy meets in such a position and cannot find here is denied. The
// method and the counts are in docs/policy-inventory.md.

// Class says what HAProxy does with an argument.
type Class uint8

const (
	// ClassNone: a known name that neither names a file nor loads code.
	ClassNone Class = iota
	// ClassRead: HAProxy reads the file (or every file of the directory).
	ClassRead
	// ClassDir: a directory later relative paths resolve against.
	ClassDir
	// ClassWrite: HAProxy creates, truncates, renames, removes or binds at
	// the path (or changes into it).
	ClassWrite
	// ClassAddr: an address, classified by its prefix (see the policy's addressClass).
	ClassAddr
	// ClassCode: loads or runs code (Lua, shared objects, programs).
	ClassCode
	// ClassEnv: reads or changes the process environment.
	ClassEnv
	// ClassPrivilege: forks, keeps capabilities or opens kernel objects
	// named by the configuration (network namespaces, descriptors).
	ClassPrivilege
)

// String names the Class in the inventory document and in tests.
func (c Class) String() string {
	return [...]string{"none", "read", "dir", "write", "address", "loads-code", "env", "privilege"}[c]
}

// Base says which base directory applies to a relative path. HAProxy
// joins "<base>/<path>" for paths that start with neither '/' nor '@';
// without a base, a relative path is relative to the current directory,
// which default-path sets (the bundle directory while checking).
type Base uint8

const (
	// BaseNone: relative to the current directory.
	BaseNone Base = iota
	// BaseCA: relative to ca-base.
	BaseCA
	// BaseCrt: relative to crt-base.
	BaseCrt
	// BaseKey: relative to key-base.
	BaseKey
	// BaseServerState: relative to server-state-base.
	BaseServerState
)

// String names the base in the inventory document.
func (b Base) String() string {
	return [...]string{"cwd", "ca-base", "crt-base", "key-base", "server-state-base"}[b]
}

// Entry is one row of the inventory.
type Entry struct {
	// Where is the place the name appears: "global", "proxy", a section
	// name, "bind", "server", "crt-list", "action", "converter", "fetch",
	// "filter", "reply", "prefix", "log-target", "special".
	Where string
	// Name is the keyword, option, function or prefix.
	Name string
	// Class is what HAProxy does with it.
	Class Class
	// Base applies to relative paths of ClassRead/ClassWrite/ClassDir
	// entries.
	Base Base
	// Key is the AllowedDirectives entry that permits it; "" when the
	// class needs none (files and addresses follow the path rules) or when
	// nothing can permit it.
	Key string
	// Src is where HAProxy 3.0 does the access.
	Src string
	// Example is a configuration line using it; "%s" stands for the path
	// or address. The tests run every example.
	Example string
}

// Keys of AllowedDirectives beyond directive names.
const (
	// KeyEnvExpansion permits environment access (the policy's
	// EnvExpansionKey).
	KeyEnvExpansion = "env-expansion"
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
