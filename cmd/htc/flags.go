package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// errHelp is returned when --help was asked for and printed.
var errHelp = errors.New("help requested")

// stringList is a repeatable flag; it also splits comma-separated values.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

// Type names the value in --help.
func (s *stringList) Type() string { return "strings" }

// Set appends the comma-separated parts of v.
func (s *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// defaultedList is a stringList whose default (e.g. from an environment
// variable) is replaced, not extended, by the first value given on the
// command line.
type defaultedList struct {
	stringList
	given bool
}

// newDefaultedList returns a list holding the comma-separated def.
func newDefaultedList(def string) *defaultedList {
	l := &defaultedList{}
	_ = l.stringList.Set(def)
	return l
}

// Set replaces the default with v on the first call and appends after.
func (l *defaultedList) Set(v string) error {
	if !l.given {
		l.stringList, l.given = nil, true
	}
	return l.stringList.Set(v)
}

// newFlagSet returns a FlagSet whose --help prints synopsis, description
// and flags to stdout. Deprecation notices go to stderr.
func newFlagSet(name, synopsis, description string, stdout, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolP("help", "h", false, "show this help")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n\nFlags:\n%s", synopsis, description, fs.FlagUsages())
	}
	return fs
}

// parse parses args; -h/--help prints usage and returns errHelp; any other
// problem is a usageError. Positional arguments are refused. A long flag
// written with one dash ("-config"), which earlier releases accepted, still
// works with a deprecation notice.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(singleDashLongFlags(fs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usageError{fmt.Errorf("%w (see 'htc %s --help')", err, fs.Name())}
	}
	if help, _ := fs.GetBool("help"); help {
		fs.Usage()
		return errHelp
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'htc %s --help')", fs.Arg(0), fs.Name())
	}
	return nil
}

// singleDashLongFlags rewrites "-name" and "-name=value" to "--name..."
// when name is a long flag of fs (pflag would read "-name" as the
// shorthands n, a, m, e), and says on fs's output that one dash is
// deprecated. Values of flags and everything after "--" are left alone.
func singleDashLongFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && fs.Lookup(name) != nil {
				fmt.Fprintf(fs.Output(), "Flag -%s: one dash is deprecated, use --%s\n", name, name)
				a = "-" + a
			}
		}
		out = append(out, a)
		if f := flagOf(fs, a); f != nil && f.NoOptDefVal == "" && !strings.Contains(a, "=") && i+1 < len(args) {
			i++ // the flag's value, whatever it looks like
			out = append(out, args[i])
		}
	}
	return out
}

// flagOf returns the flag arg names ("--name", "--name=v", "-x"), or nil.
func flagOf(fs *pflag.FlagSet, arg string) *pflag.Flag {
	switch {
	case strings.HasPrefix(arg, "--"):
		name, _, _ := strings.Cut(arg[2:], "=")
		return fs.Lookup(name)
	case len(arg) == 2 && arg[0] == '-':
		return fs.ShorthandLookup(arg[1:])
	}
	return nil
}

// deprecatedAlias makes old another name of the flag current: it sets the
// same value, is hidden from --help, and using it prints a deprecation
// notice. The alias is kept for one release.
func deprecatedAlias(fs *pflag.FlagSet, old, current string) {
	f := fs.Lookup(current)
	fs.AddFlag(&pflag.Flag{Name: old, Usage: "deprecated: use --" + current, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal})
	_ = fs.MarkDeprecated(old, "use --"+current+" instead")
}

// envDefault returns the environment variable's value, or def when unset.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envDefaultRenamed is envDefault for a variable that was renamed: name's
// value, else the deprecated old one's (with a notice on w), else def.
func envDefaultRenamed(name, old, def string, w io.Writer) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	if v, ok := os.LookupEnv(old); ok {
		fmt.Fprintf(w, "Environment variable %s is deprecated, use %s instead\n", old, name)
		return v
	}
	return def
}

// oneOf checks a flag value against its allowed values.
func oneOf(flagName, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return usagef("--%s: %q is not one of %s", flagName, v, strings.Join(allowed, ", "))
}
