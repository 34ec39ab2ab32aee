package examples_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/config/validation"
	"github.com/haproxy-template/htc/pkg/dryrun"
	renderpkg "github.com/haproxy-template/htc/pkg/render"
)

// libraryConfigs are the Ingress libraries' configs, by name.
var libraryConfigs = []struct{ name, path string }{
	{"ingress", "ingress/config.yaml"},
	{"ingress-nginx", ngxConfigPath},
}

// TestBuildParsesTheTemplatesOnce: building a pipeline (what every config
// UPDATE's admission does first) validates the config and keeps the render
// engine validation built, instead of parsing and scanning the templates a
// second time: it allocates less than validation plus half an engine.
func TestBuildParsesTheTemplatesOnce(t *testing.T) {
	for _, lib := range libraryConfigs {
		cfg, err := config.LoadFile(lib.path)
		require.NoError(t, err)
		validate := testing.AllocsPerRun(3, func() { require.Empty(t, validation.Validate(cfg)) })
		engine := testing.AllocsPerRun(3, func() {
			_, err := renderpkg.New(&cfg.Spec)
			require.NoError(t, err)
		})
		build := testing.AllocsPerRun(3, func() {
			_, err := dryrun.Build(cfg, dryrun.Env{})
			require.NoError(t, err)
		})
		t.Logf("%s: allocations: validate %.0f, an engine %.0f, build %.0f", lib.name, validate, engine, build)
		assert.Less(t, build, validate+engine/2, lib.name)
	}
}

// TestBuildTakesTheTemplatesOfAnEarlierBuild: with Env.Templates, building
// the pipeline of a config whose templates were compiled before (a config
// judged again, the config the controller loads after admitting it)
// allocates less than half what the first build did: the templates are
// neither parsed nor scanned again.
func TestBuildTakesTheTemplatesOfAnEarlierBuild(t *testing.T) {
	for _, lib := range libraryConfigs {
		cfg, err := config.LoadFile(lib.path)
		require.NoError(t, err)
		first := testing.AllocsPerRun(3, func() {
			_, err := dryrun.Build(cfg, dryrun.Env{Templates: renderpkg.NewTemplates(1)})
			require.NoError(t, err)
		})
		env := dryrun.Env{Templates: renderpkg.NewTemplates(1)}
		again := testing.AllocsPerRun(3, func() {
			_, err := dryrun.Build(cfg, env)
			require.NoError(t, err)
		})
		t.Logf("%s: allocations: a first build %.0f, a build again %.0f", lib.name, first, again)
		assert.Less(t, again, first/2, lib.name)
	}
}

// BenchmarkIngressLibrariesBuild builds each library's pipeline (validation,
// the watched model, the render engine): the part of a config UPDATE's
// admission before its render; templates-kept builds it again with the
// template set kept by an earlier build (Env.Templates).
//
//	go test -run '^$' -bench IngressLibrariesBuild -benchmem ./examples/
func BenchmarkIngressLibrariesBuild(b *testing.B) {
	for _, lib := range libraryConfigs {
		cfg, err := config.LoadFile(lib.path)
		require.NoError(b, err)
		b.Run(lib.name, func(b *testing.B) {
			for _, kept := range []bool{false, true} {
				name, env := "compile", dryrun.Env{}
				if kept {
					name, env.Templates = "templates-kept", renderpkg.NewTemplates(1)
				}
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if _, err := dryrun.Build(cfg, env); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
