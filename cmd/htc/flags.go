package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// errHelp is returned when --help was asked for and printed.
var errHelp = errors.New("help requested")

// stringList is a repeatable flag; it also splits comma-separated values.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

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

func (l *defaultedList) Set(v string) error {
	if !l.given {
		l.stringList, l.given = nil, true
	}
	return l.stringList.Set(v)
}

// newFlagSet returns a FlagSet whose usage prints synopsis, description and flags to w.
func newFlagSet(name, synopsis, description string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, description)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args; -h/--help prints usage and returns errHelp; any other
// problem is a usageError. Positional arguments are refused.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp // the flag package already printed the usage
		}
		return usageError{fmt.Errorf("%w (see 'htc %s --help')", err, fs.Name())}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'htc %s --help')", fs.Arg(0), fs.Name())
	}
	return nil
}

// envDefault returns the environment variable's value, or def when unset.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
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
