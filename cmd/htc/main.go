// Command htc is the HAProxy template controller: it renders an HAProxy
// configuration from templates over Kubernetes resources and validates every
// proposed change with a dry-run admission webhook.
//
// Subcommands:
//
//	htc controller   run the controller and its validating webhook (in or out of cluster)
//	htc validate     run a config's embedded validation tests
//	htc render       render a config over manifests and print the bundle
//	htc check        the admission decision for one object, offline
//	htc audit        what a migration library makes of a cluster's Ingresses
//	htc version      print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by every subcommand.
const (
	exitOK          = 0   // allowed / all tests passed / success
	exitRejected    = 1   // denied / a test failed
	exitUsage       = 2   // bad input: flags, files, YAML, config
	exitInterrupted = 130 // SIGINT or SIGTERM stopped a command before its answer
)

// errInterrupted is returned by a command that a signal stopped before it
// had an answer; it printed nothing of a result.
var errInterrupted = errors.New("interrupted")

// usageError marks errors caused by the caller's input (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// rejectedError marks a completed run whose answer is "no" (exit code 1);
// its message has already been printed.
type rejectedError struct{}

func (rejectedError) Error() string { return "rejected" }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"controller", "run the controller and its validating webhook", runController},
		{"validate", "run a config's embedded validation tests", runValidate},
		{"render", "render a config over manifests and print the bundle", runRender},
		{"check", "decide offline whether a change would be admitted", runCheck},
		{"audit", "classify a cluster's Ingresses against a migration library, read-only", runAudit},
		{"version", "print the version", runVersion},
	}
}

// main runs a command under a context that SIGINT and SIGTERM end: every
// command stops its work (a running haproxy -c is killed with its process
// group) and exits; the controller shuts down cleanly (exit 0), the other
// commands exit 130 with one line on stderr.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and maps its error to an exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		topUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		var rejected rejectedError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, errHelp):
			return exitOK
		case errors.Is(err, errInterrupted):
			fmt.Fprintf(stderr, "htc %s: stopped before finishing: %v\n", c.name, context.Cause(ctx))
			return exitInterrupted
		case errors.As(err, &rejected):
			return exitRejected
		default:
			fmt.Fprintf(stderr, "htc %s: %v\n", c.name, err)
			var ue usageError
			if errors.As(err, &ue) {
				return exitUsage
			}
			return exitRejected
		}
	}
	fmt.Fprintf(stderr, "htc: unknown command %q (see 'htc --help')\n", args[0])
	return exitUsage
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, "htc renders HAProxy configuration from templates over Kubernetes resources\nand denies, at admission, any change that would break it.\n\nUsage:\n  htc <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'htc <command> --help' for the flags of a command.\nExit codes: 0 success/allowed, 1 denied or tests failed, 2 bad input,\n130 stopped by SIGINT or SIGTERM.\n")
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "htc version", "Print the version.", stdout, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "htc %s\n", currentBuild().Version)
	return nil
}
