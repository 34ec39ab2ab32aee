package attacks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// configNamespace is where the corpus's configs live (as the chart installs them).
const configNamespace = "htc-system"

// baseConfigNames maps a base config to its HAProxyTemplateConfig name.
var baseConfigNames = map[string]string{"example": "htc", "wide": "wide", "gateway": "gateway", "nginx": "nginx"}

var fixtures struct {
	state   []map[string]any          // the state objects
	configs map[string]map[string]any // base config name → object
	minimal map[string]any
}

// writeFixtures renders the state (planting the secrets) and writes the
// base configs: "example" is examples/ingress/config.yaml itself; "wide" is
// the example with every watched resource validated by the webhook and the
// sinks of configs/sinks.tmpl appended to its haproxy.cfg template (object
// fields a template author passes to HAProxy through the safe helpers), and
// a default-path in a block HAProxy skips at the start of its global
// section (wideGlobal, for the intmap sink); "gateway" is
// examples/gateway/config.yaml (the Gateway API library) named gateway;
// "nginx" is examples/ingress-nginx/config.yaml (the ingress-nginx
// library) named nginx.
func writeFixtures() error {
	raw, err := os.ReadFile("state/state.yaml")
	if err != nil {
		return err
	}
	tmpl, err := template.New("state").Delims("[[", "]]").Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]string{
		"TokenB64":   b64([]byte(env.planted.token)),
		"DBURLB64":   b64([]byte("postgres://admin:" + env.planted.token + "@db.internal:5432/app")),
		"TLSCertB64": b64(env.planted.tlsCert),
		"TLSKeyB64":  b64(env.planted.tlsKey),
	})
	if err != nil {
		return err
	}
	env.state = filepath.Join(env.root, "state.yaml")
	if err := os.WriteFile(env.state, buf.Bytes(), 0o644); err != nil {
		return err
	}
	for _, doc := range strings.Split(buf.String(), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("state: %w", err)
		}
		if obj != nil {
			fixtures.state = append(fixtures.state, obj)
		}
	}

	env.configs = map[string]string{"example": filepath.Join(env.repo, "examples/ingress/config.yaml")}
	fixtures.configs = map[string]map[string]any{}
	example, err := readYAML(env.configs["example"])
	if err != nil {
		return err
	}
	fixtures.configs["example"] = example

	wide := deepCopy(example)
	meta := wide["metadata"].(map[string]any)
	meta["name"] = baseConfigNames["wide"]
	spec := wide["spec"].(map[string]any)
	for _, w := range spec["watchedResources"].(map[string]any) {
		w.(map[string]any)["webhookValidation"] = true
	}
	sinks, err := os.ReadFile("configs/sinks.tmpl")
	if err != nil {
		return err
	}
	hc := spec["haproxyConfig"].(map[string]any)
	tmplText := hc["template"].(string)
	if !strings.HasPrefix(tmplText, "global\n") {
		return fmt.Errorf("the example's haproxy.cfg template does not start with its global section")
	}
	hc["template"] = wideGlobal + strings.TrimPrefix(tmplText, "global\n") + string(sinks)
	statusSink, err := os.ReadFile("configs/status-sink.tmpl")
	if err != nil {
		return err
	}
	rs := spec["resourceStatus"].(map[string]any)
	rs["template"] = rs["template"].(string) + string(statusSink)
	fixtures.configs["wide"] = wide
	env.configs["wide"] = filepath.Join(env.root, "wide.json")
	b, err := json.MarshalIndent(wide, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(env.configs["wide"], b, 0o644); err != nil {
		return err
	}
	gateway, err := readYAML(filepath.Join(env.repo, "examples/gateway/config.yaml"))
	if err != nil {
		return err
	}
	gateway["metadata"].(map[string]any)["name"] = baseConfigNames["gateway"]
	fixtures.configs["gateway"] = gateway
	if env.configs["gateway"], err = writeJSON(env.root, "gateway.json", gateway); err != nil {
		return err
	}
	nginx, err := readYAML(filepath.Join(env.repo, "examples/ingress-nginx/config.yaml"))
	if err != nil {
		return err
	}
	nginx["metadata"].(map[string]any)["name"] = baseConfigNames["nginx"]
	fixtures.configs["nginx"] = nginx
	if env.configs["nginx"], err = writeJSON(env.root, "nginx.json", nginx); err != nil {
		return err
	}
	fixtures.minimal, err = readYAML("configs/minimal.yaml")
	return err
}

// wideGlobal starts the wide config's global section: a default-path
// HAProxy never applies (issue 23), before the example's own lines.
const wideGlobal = "global\n.if 0\n  default-path origin files\n.endif\n"

func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// deepCopy copies a JSON-like value.
func deepCopy(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// baseConfigObject returns a copy of a base config object.
func baseConfigObject(name string) map[string]any { return deepCopy(fixtures.configs[name]) }

// stateObject returns a copy of the state object with obj's apiVersion,
// kind, namespace and name, or nil.
func stateObject(obj map[string]any) map[string]any {
	key := objectKey(obj)
	for _, s := range fixtures.state {
		if objectKey(s) == key {
			return deepCopy(s)
		}
	}
	return nil
}

func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v/%v/%v", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
}

// buildProposed builds a proposed config: the base, named as the config of
// judge (the base config whose controller judges it), patched.
func buildProposed(p *Proposed, judge string) (map[string]any, error) {
	var obj map[string]any
	switch p.Base {
	case "example", "wide", "gateway", "nginx":
		obj = baseConfigObject(p.Base)
	case "minimal":
		obj = deepCopy(fixtures.minimal)
	default:
		return nil, fmt.Errorf("base %q: want example, wide, gateway, nginx or minimal", p.Base)
	}
	obj["metadata"] = map[string]any{"name": baseConfigNames[judge], "namespace": configNamespace}
	delete(obj, "status")
	for i, op := range p.Patch {
		if err := applyPatch(obj, op); err != nil {
			return nil, fmt.Errorf("patch[%d]: %w", i, err)
		}
	}
	return obj, nil
}

// pointer splits a JSON pointer into keys.
func pointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q is not a JSON pointer (/a/b)", p)
	}
	keys := strings.Split(p[1:], "/")
	for i, k := range keys {
		keys[i] = strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
	}
	return keys, nil
}

// parent walks to the map holding the last key, creating maps when create.
func parent(obj map[string]any, keys []string, create bool) (map[string]any, error) {
	m := obj
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			if !create || m[k] != nil {
				return nil, fmt.Errorf("%q is not an object", k)
			}
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m, nil
}

func applyPatch(obj map[string]any, op PatchOp) error {
	var (
		path string
		n    int
	)
	for _, p := range []string{op.Set, op.Delete, op.Replace, op.Append} {
		if p != "" {
			path = p
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("want exactly one of set, delete, replace, append")
	}
	keys, err := pointer(path)
	if err != nil {
		return err
	}
	m, err := parent(obj, keys, op.Set != "")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	last := keys[len(keys)-1]
	switch {
	case op.Set != "":
		m[last] = op.Value
	case op.Delete != "":
		if _, ok := m[last]; !ok {
			return fmt.Errorf("%s: nothing to delete", path)
		}
		delete(m, last)
	case op.Replace != "":
		s, ok := m[last].(string)
		if !ok || op.Old == "" || strings.Count(s, op.Old) != 1 {
			return fmt.Errorf("%s: %q occurs %d times, want exactly once", path, op.Old, strings.Count(s, op.Old))
		}
		m[last] = strings.Replace(s, op.Old, op.New, 1)
	case op.Append != "":
		s, _ := m[last].(string)
		v, ok := op.Value.(string)
		if !ok {
			return fmt.Errorf("%s: append wants a string value", path)
		}
		m[last] = s + v
	}
	return nil
}
