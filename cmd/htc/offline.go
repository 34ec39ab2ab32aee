package main

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/store/manifest"
)

// offline is a config, its pipeline and (optionally) stores filled from
// manifests: everything the offline subcommands need.
type offline struct {
	cfg      *config.HAProxyTemplateConfig
	pipeline *dryrun.Pipeline
	checker  *haproxy.Checker
	stores   map[string]*store.Store
	mapper   meta.RESTMapper
}

// loadOffline loads and validates the config file and builds its pipeline.
func loadOffline(configPath, haproxyPath string) (*offline, error) {
	if configPath == "" {
		return nil, usagef("-f/--config is required")
	}
	cfg, err := config.LoadFile(configPath)
	if err != nil {
		return nil, usageError{err}
	}
	if errs := validation.Validate(cfg); len(errs) > 0 {
		return nil, usageError{fmt.Errorf("%s: invalid config: %w", configPath, errs.ToAggregate())}
	}
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: haproxyPath, AllowedDirectives: cfg.Spec.AllowedDirectives})
	if err != nil {
		return nil, err
	}
	p, err := dryrun.NewPipeline(cfg, checker, "")
	if err != nil {
		return nil, usageError{err}
	}
	stores, err := dryrun.NewStores(&cfg.Spec)
	if err != nil {
		return nil, usageError{err}
	}
	return &offline{cfg: cfg, pipeline: p, checker: checker, stores: stores}, nil
}

// loadState reads the state manifests and adds each object to the store of
// every watched resource that covers it (apiVersion + resources, label
// selector). Objects no watched resource covers are ignored.
func (o *offline) loadState(paths []string) error {
	objs, err := manifest.LoadPaths(paths)
	if err != nil {
		return usageError{err}
	}
	if o.mapper, err = manifest.NewRESTMapper(objs); err != nil {
		return usageError{err}
	}
	for _, obj := range objs {
		gvr, err := o.resourceOf(obj)
		if err != nil {
			continue // not a watched kind: a CRD, a Namespace, ...
		}
		for _, key := range o.cfg.Spec.StoreKeysFor(gvr) {
			ok, err := selected(o.cfg.Spec.WatchedResources[key], obj)
			if err != nil {
				return usageError{err}
			}
			if !ok {
				continue
			}
			if err := o.stores[key].Add(obj.Unstructured); err != nil {
				return usageError{fmt.Errorf("%s: %w", obj.Source, err)}
			}
		}
	}
	return nil
}

// resourceOf resolves an object's kind to its resource with the RESTMapper.
func (o *offline) resourceOf(obj manifest.Object) (schema.GroupVersionResource, error) {
	gvk := obj.GroupVersionKind()
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
	if len(o.cfg.Spec.StoreKeysFor(gvr)) == 0 {
		var watched []string
		for k, w := range o.cfg.Spec.WatchedResources {
			watched = append(watched, fmt.Sprintf("%s (%s %s)", k, w.APIVersion, w.Resources))
		}
		return gvr, fmt.Errorf("%s: no watched resource covers %s %s; watched: %s", obj.Source, gvr.GroupVersion(), gvr.Resource, strings.Join(watched, ", "))
	}
	return gvr, nil
}

func selected(w config.WatchedResource, obj manifest.Object) (bool, error) {
	if w.LabelSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(w.LabelSelector)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(obj.GetLabels())), nil
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
