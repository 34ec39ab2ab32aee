package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/store/manifest"
	"github.com/haproxy-template/htc/pkg/watched"
)

// offline is a config's pipeline and (optionally) stores filled from
// manifests: everything the offline subcommands need.
type offline struct {
	pipeline *dryrun.Pipeline
	stores   map[string]*store.Store
	mapper   meta.RESTMapper
	// objects are every object of the state whose kind the mapper
	// resolves, whole, whether the config watches it or not: what a
	// proposed config is judged over (htc check).
	objects watched.Objects
}

// allowedDirectivesFlag defines --allowed-directives, the operator's grant
// (default from HTC_ALLOWED_DIRECTIVES).
func allowedDirectivesFlag(fs *pflag.FlagSet) *defaultedList {
	l := newDefaultedList(envDefault("HTC_ALLOWED_DIRECTIVES", ""))
	fs.Var(l, "allowed-directives", "what configs may ask for in spec.allowedDirectives: directives the policy refuses by default (lua-load, ssl-provider, ...), env-expansion, path:<dir>; comma-separated or repeated; a config asking for more is refused; empty grants nothing (env HTC_ALLOWED_DIRECTIVES)")
	return l
}

// configFlag defines -f/--config, the HAProxyTemplateConfig file (--f
// stays a deprecated alias).
func configFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVarP(p, "config", "f", "", "HAProxyTemplateConfig file (YAML or JSON)")
	deprecatedAlias(fs, "f", "config")
}

// outputFlag defines -o/--output (--o stays a deprecated alias).
func outputFlag(fs *pflag.FlagSet, p *string, usage string) {
	fs.StringVarP(p, "output", "o", "text", usage)
	deprecatedAlias(fs, "o", "output")
}

// checkingEnv returns the Env of commands that check, with the operator's
// grant and each render and check bounded by renderCheckTimeout: the
// haproxy binary is resolved now, so a missing one is reported before any
// work. wait blocks until every check started in env has
// returned (haproxy killed, workspace removed): a command interrupted by a
// signal calls it before it exits, so that nothing it started outlives it.
func checkingEnv(haproxyPath string, grant []string) (env dryrun.Env, wait func(), err error) {
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: haproxyPath})
	if err != nil {
		return dryrun.Env{}, nil, err
	}
	env = dryrun.Env{Grant: grant, CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) },
		RenderCheckTimeout: renderCheckTimeout}
	return env, checker.Wait, nil
}

// loadChecking is loadOffline in a checkingEnv (the haproxy binary, the
// operator's grant) whose embedded test reports, with testCache, are kept
// in that directory (by config, htc build, haproxy and grant). wait is
// checkingEnv's.
func loadChecking(configPath, haproxyPath string, grant []string, testCache string) (o *offline, env dryrun.Env, wait func(), err error) {
	env, wait, err = checkingEnv(haproxyPath, grant)
	if err != nil {
		return nil, env, nil, err
	}
	if testCache != "" {
		env.Tests = testrun.NewCacheWithStore(4, testrun.DirStore{Dir: testCache, Salt: testCacheSalt(haproxyPath, grant)})
	}
	if o, err = loadOffline(configPath, env); err != nil {
		wait()
		return nil, env, nil, err
	}
	return o, env, wait, nil
}

// loadOffline loads the config file and builds its pipeline in env (the
// zero Env for commands that only render), with empty stores.
func loadOffline(configPath string, env dryrun.Env) (*offline, error) {
	if configPath == "" {
		return nil, usagef("-f/--config is required")
	}
	cfg, err := config.LoadFile(configPath)
	if err != nil {
		return nil, usageError{err}
	}
	p, err := dryrun.Build(cfg, env)
	if err != nil {
		if _, ok := errors.AsType[*dryrun.InvalidConfigError](err); ok {
			return nil, usageError{fmt.Errorf("%s: invalid config: %w", configPath, err)}
		}
		return nil, usageError{err}
	}
	return &offline{pipeline: p, stores: p.Model.NewStores()}, nil
}

// loadState reads the state manifests and adds each object to the store of
// every watched resource that covers it (see watched.Model.Add), and to
// o.objects. Objects no watched resource covers are in o.objects only.
func (o *offline) loadState(paths []string) error {
	objs, err := manifest.LoadPaths(paths)
	if err != nil {
		return usageError{err}
	}
	if o.mapper, err = manifest.NewRESTMapper(objs); err != nil {
		return usageError{err}
	}
	o.objects = watched.Objects{}
	for _, obj := range objs {
		gvr, err := o.resourceOf(obj)
		if err != nil {
			continue // a kind the state does not define
		}
		o.objects[gvr] = append(o.objects[gvr], obj.Unstructured)
		if _, err := o.pipeline.Model.Add(o.stores, gvr, obj.Unstructured); err != nil {
			return usageError{fmt.Errorf("%s: %w", obj.Source, err)}
		}
	}
	return nil
}

// resourceOf resolves an object's kind to its resource with the RESTMapper.
func (o *offline) resourceOf(obj manifest.Object) (schema.GroupVersionResource, error) {
	gvk := obj.GroupVersionKind()
	if gvk.GroupKind() == config.GroupVersion.WithKind(config.Kind).GroupKind() {
		return config.GroupVersion.WithResource(config.Resource), nil
	}
	m, err := o.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("%s: %s is not a known kind: %w", obj.Source, gvk, err)
	}
	return m.Resource, nil
}

// covering returns the object's resource when some watched resource covers it.
func (o *offline) covering(obj manifest.Object) (schema.GroupVersionResource, error) {
	gvr, err := o.resourceOf(obj)
	if err != nil {
		return gvr, err
	}
	if len(o.pipeline.Model.For(gvr)) == 0 {
		var watched []string
		for _, r := range o.pipeline.Model.All() {
			watched = append(watched, fmt.Sprintf("%s (%s %s)", r.Key, r.GVR.GroupVersion(), r.GVR.Resource))
		}
		return gvr, fmt.Errorf("%s: no watched resource covers %s %s; watched: %s", obj.Source, gvr.GroupVersion(), gvr.Resource, strings.Join(watched, ", "))
	}
	return gvr, nil
}

// loadOne reads a manifest file that must hold exactly one object.
func loadOne(flagName, path string) (manifest.Object, error) {
	if _, err := os.Stat(path); err != nil {
		return manifest.Object{}, usagef("--%s: %v", flagName, err)
	}
	objs, err := manifest.LoadFile(path)
	if err != nil {
		return manifest.Object{}, usageError{err}
	}
	if len(objs) != 1 {
		return manifest.Object{}, usagef("--%s %s: want exactly one object, found %d", flagName, path, len(objs))
	}
	return objs[0], nil
}
