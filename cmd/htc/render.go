package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

func runRender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("render", "htc render -f config.yaml --state PATH... [--out DIR] [--status FILE]",
		"Render an HAProxyTemplateConfig over the objects in the state manifests and print\nthe bundle (haproxy.cfg first, then maps, files and certificates), or write it to\n--out. Paths from pathFor point into --out (or /etc/haproxy when printing).\n--status writes the status documents spec.resourceStatus rendered (the status\nthe controller would apply to each object; - prints them instead of the bundle).", stdout, stderr)
	var (
		configPath string
		state      stringList
		outDir     string
		statusPath string
	)
	configFlag(fs, &configPath)
	fs.Var(&state, "state", "manifest file or directory of the cluster state (repeatable)")
	fs.StringVar(&outDir, "out", "", "write the bundle into this directory instead of printing it")
	fs.StringVar(&statusPath, "status", "", "write the rendered status documents (spec.resourceStatus) to this file; - prints them instead of the bundle")
	if err := parse(fs, args); err != nil {
		return err
	}
	// Rendering needs no checker: htc render works without haproxy.
	env := dryrun.Env{BaseDir: dryrun.DefaultBaseDir}
	if outDir != "" {
		var err error
		if env.BaseDir, err = filepath.Abs(outDir); err != nil {
			return usagef("--out: %v", err)
		}
	}
	o, err := loadOffline(configPath, env)
	if err != nil {
		return err
	}
	if err := o.loadState(state); err != nil {
		return err
	}
	base := env.BaseDir
	b, err := o.pipeline.Render(ctx, store.ReadOnly(o.stores))
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		fmt.Fprintf(stderr, "rendering failed: %s\n", phase.Reason(err))
		return rejectedError{}
	}
	if statusPath != "" {
		if err := writeStatus(statusPath, b, stdout); err != nil {
			return err
		}
		if statusPath == "-" && outDir == "" {
			return nil
		}
	}
	if outDir != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return err
		}
		if err := bundle.Write(base, b); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d files to %s\n", len(b.AllFiles()), base)
		return nil
	}
	for i, f := range b.AllFiles() {
		if i > 0 {
			fmt.Fprintf(stdout, "\n# ---- %s ----\n", f.RelPath)
		} else {
			fmt.Fprintf(stdout, "# ---- %s ----\n", f.RelPath)
		}
		fmt.Fprint(stdout, f.Content)
	}
	return nil
}

// writeStatus writes b's status documents to path ("-": w), as a YAML
// stream.
func writeStatus(path string, b *bundle.Bundle, w io.Writer) error {
	docs, err := resourcestatus.Marshal(b.Status)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = io.WriteString(w, docs)
		return err
	}
	return os.WriteFile(path, []byte(docs), 0o644)
}
