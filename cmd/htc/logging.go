package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// logFlags are --log-level and --log-format.
type logFlags struct {
	level, format string
}

// parseLevel returns the slog level a --log-level value names (any case).
func parseLevel(name string) (slog.Level, bool) {
	switch strings.ToLower(name) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

// klogVerbosity is client-go's (klog's) verbosity at --log-level debug:
// its V(1) to V(4) messages then reach the log (as debug records); from
// info up klog logs only its errors, warnings and V(0) information.
const klogVerbosity = 4

// addLogFlags defines --log-level and --log-format on fs.
func addLogFlags(fs *pflag.FlagSet) *logFlags {
	l := &logFlags{}
	fs.StringVar(&l.level, "log-level", envDefault("HTC_LOG_LEVEL", "info"), "least severe log records written: debug, info, warn or error; debug includes client-go's verbose records (env HTC_LOG_LEVEL)")
	fs.StringVar(&l.format, "log-format", envDefault("HTC_LOG_FORMAT", "json"), "log record format on stderr: json or text (log/slog's handlers) (env HTC_LOG_FORMAT)")
	return l
}

// newLogger returns the slog logger the flags ask for, writing to w.
func (l *logFlags) newLogger(w io.Writer) (*slog.Logger, error) {
	level, ok := parseLevel(l.level)
	if !ok {
		return nil, usagef("--log-level: %q is not one of debug, info, warn, error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, usagef("--log-format: %q is not one of json, text", l.format)
}

// setUp returns the logger the flags ask for and makes it the process's
// logger: slog's default (and so the standard log package's) and klog's,
// which client-go logs through. klog's verbosity follows the level.
func (l *logFlags) setUp(w io.Writer) (*slog.Logger, error) {
	log, err := l.newLogger(w)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(log)
	klog.SetSlogLogger(log)
	verbosity := 0
	if log.Enabled(context.Background(), slog.LevelDebug) {
		verbosity = klogVerbosity
	}
	if err := setKlogVerbosity(verbosity); err != nil {
		return nil, err
	}
	return log, nil
}

// setKlogVerbosity sets klog's -v through a private flag set (klog keeps
// its settings in package state).
func setKlogVerbosity(v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", fmt.Sprint(v)); err != nil {
		return fmt.Errorf("klog verbosity: %w", err)
	}
	return nil
}
