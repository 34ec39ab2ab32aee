package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
)

// decodeAs re-encodes a rendered object into a typed API object.
func decodeAs(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, into))
}

// rendered is the Deployment and NetworkPolicy of one helm template output.
type rendered struct {
	deploy appsv1.Deployment
	netpol networkingv1.NetworkPolicy
}

func renderTyped(t *testing.T, args ...string) rendered {
	t.Helper()
	objs := docs(t, render(t, args...))
	var r rendered
	decodeAs(t, one(t, objs, "Deployment"), &r.deploy)
	decodeAs(t, one(t, objs, "NetworkPolicy"), &r.netpol)
	return r
}

func (r rendered) container(t *testing.T, name string) *corev1.Container {
	t.Helper()
	for i, c := range r.deploy.Spec.Template.Spec.Containers {
		if c.Name == name {
			return &r.deploy.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func mount(c *corev1.Container, volume string) *corev1.VolumeMount {
	for i, vm := range c.VolumeMounts {
		if vm.Name == volume {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// flags returns the --name=value arguments of the controller container.
func flags(c *corev1.Container) map[string]string {
	out := map[string]string{}
	for _, a := range c.Args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			out[k] = v
		}
	}
	return out
}

// haproxyExec parses the `haproxy ... &` line of the haproxy container's
// script (it starts HAProxy in the background and stays PID 1 to forward
// SIGTERM) into its arguments (the paths are single-quoted) and returns
// the file the script waits for (`until [ -s FILE ]`).
func haproxyExec(t *testing.T, script string) (args []string, waitsFor string) {
	t.Helper()
	for _, line := range strings.Split(script, "\n") {
		fields := strings.Fields(strings.ReplaceAll(strings.TrimSpace(line), "'", ""))
		switch {
		case len(fields) >= 2 && fields[0] == "haproxy" && fields[len(fields)-1] == "&":
			require.Nil(t, args, "one haproxy line")
			args = fields[:len(fields)-1]
		case len(fields) >= 4 && fields[0] == "until" && fields[1] == "[" && fields[2] == "-s":
			waitsFor = fields[3]
		}
	}
	require.NotNil(t, args, "the script starts haproxy:\n%s", script)
	return args, waitsFor
}

// optionValue is the argument after opt in args.
func optionValue(args []string, opt string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == opt {
			return args[i+1]
		}
	}
	return ""
}

type port struct {
	name string
	num  int32
}

// TestHAProxySidecar: with haproxy.enabled the controller publishes to the
// config volume and reloads HAProxy through the master socket in the run
// volume, HAProxy (in master-worker mode) waits for the first publish and
// reads it from the same place, its ports come from the values and the
// NetworkPolicy admits them. Without it nothing of this is rendered.
func TestHAProxySidecar(t *testing.T) {
	cases := []struct {
		name               string
		args               []string
		configDir, runDir  string
		ports              []port
		runScriptInTempDir bool
	}{
		{
			name:      "defaults",
			args:      []string{"-f", "testdata/values-haproxy.yaml"},
			configDir: "/etc/haproxy/htc", runDir: "/var/run/htc",
			ports: []port{{"http", 8080}, {"https", 8443}},
		},
		{
			name: "custom",
			args: []string{"-f", "testdata/values-haproxy.yaml",
				"--set", "haproxy.configDir=/srv/haproxy/conf", "--set", "haproxy.runDir=/run/haproxy",
				"--set", "haproxy.ports[0].name=web,haproxy.ports[0].containerPort=8000"},
			configDir: "/srv/haproxy/conf", runDir: "/run/haproxy",
			ports: []port{{"web", 8000}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := renderTyped(t, tc.args...)
			ctl, hap := r.container(t, "controller"), r.container(t, "haproxy")
			socket := tc.runDir + "/master.sock"
			cfgFile := tc.configDir + "/haproxy.cfg"

			f := flags(ctl)
			assert.Equal(t, tc.configDir, f["output-dir"], "--output-dir")
			assert.Equal(t, socket, f["haproxy-master-socket"], "--haproxy-master-socket")

			// volumes: both emptyDirs, the config read-only in HAProxy, the run dir writable in both
			vols := map[string]corev1.Volume{}
			for _, v := range r.deploy.Spec.Template.Spec.Volumes {
				vols[v.Name] = v
			}
			for _, name := range []string{"haproxy-config", "haproxy-run"} {
				require.Contains(t, vols, name)
				assert.NotNil(t, vols[name].EmptyDir, "%s is an emptyDir", name)
			}
			for _, c := range []*corev1.Container{ctl, hap} {
				run := mount(c, "haproxy-run")
				require.NotNil(t, run, "%s mounts the run volume", c.Name)
				assert.Equal(t, tc.runDir, run.MountPath, c.Name)
				assert.False(t, run.ReadOnly, "%s mounts the run volume read-write (HAProxy creates the socket, the controller connects)", c.Name)
				cfg := mount(c, "haproxy-config")
				require.NotNil(t, cfg, "%s mounts the config volume", c.Name)
				assert.Equal(t, tc.configDir, cfg.MountPath, c.Name)
			}
			assert.False(t, mount(ctl, "haproxy-config").ReadOnly, "the controller writes the config volume")
			assert.True(t, mount(hap, "haproxy-config").ReadOnly, "HAProxy only reads the config volume")

			// HAProxy waits for the first publish, then runs in the foreground in master-worker mode
			assert.Equal(t, []string{"/bin/sh", "-c"}, hap.Command)
			require.Len(t, hap.Args, 1, "one script")
			args, waitsFor := haproxyExec(t, hap.Args[0])
			assert.Equal(t, cfgFile, waitsFor, "the script waits for the published haproxy.cfg")
			assert.Equal(t, "haproxy", args[0])
			assert.Contains(t, args, "-W", "master-worker mode")
			assert.Contains(t, args, "-db", "foreground")
			assert.Equal(t, socket+",mode,660", optionValue(args, "-S"), "the master socket is the controller's --haproxy-master-socket, connectable by the pod's group")
			assert.Equal(t, cfgFile, optionValue(args, "-f"), "HAProxy reads what the controller publishes")

			// ports
			var got []port
			for _, p := range hap.Ports {
				assert.Equal(t, corev1.ProtocolTCP, p.Protocol, p.Name)
				got = append(got, port{p.Name, p.ContainerPort})
			}
			assert.Equal(t, tc.ports, got, "haproxy container ports")

			// the NetworkPolicy admits them from anywhere
			for _, p := range tc.ports {
				assert.True(t, admitsFromAnywhere(r.netpol, p), "the NetworkPolicy admits HAProxy's port %s (%d)", p.name, p.num)
			}
		})
	}

	t.Run("disabled", func(t *testing.T) {
		r := renderTyped(t)
		require.Len(t, r.deploy.Spec.Template.Spec.Containers, 1, "only the controller")
		ctl := r.container(t, "controller")
		f := flags(ctl)
		assert.NotContains(t, f, "output-dir")
		assert.NotContains(t, f, "haproxy-master-socket")
		assert.Nil(t, mount(ctl, "haproxy-run"))
		assert.Nil(t, mount(ctl, "haproxy-config"))
		for _, v := range r.deploy.Spec.Template.Spec.Volumes {
			assert.NotContains(t, []string{"haproxy-run", "haproxy-config"}, v.Name)
		}
		assert.False(t, admitsFromAnywhere(r.netpol, port{"http", 8080}), "no HAProxy port is opened")
	})

	t.Run("host-network", func(t *testing.T) {
		r := renderTyped(t, "-f", "testdata/values-haproxy.yaml")
		assert.False(t, r.deploy.Spec.Template.Spec.HostNetwork, "the pod's own network namespace by default")
		assert.Equal(t, r.container(t, "controller").SecurityContext, r.container(t, "haproxy").SecurityContext,
			"HAProxy runs with the controller's securityContext by default")

		r = renderTyped(t, "-f", "testdata/values-haproxy.yaml", "--set", "haproxy.hostNetwork=true",
			"--set", "haproxy.securityContext.runAsUser=0", "--set", "haproxy.securityContext.capabilities.add[0]=NET_BIND_SERVICE")
		spec := r.deploy.Spec.Template.Spec
		assert.True(t, spec.HostNetwork, "haproxy.hostNetwork puts the pod in the node's network namespace")
		assert.Equal(t, corev1.DNSClusterFirstWithHostNet, spec.DNSPolicy)
		sc := r.container(t, "haproxy").SecurityContext
		require.NotNil(t, sc)
		require.NotNil(t, sc.RunAsUser)
		assert.Equal(t, int64(0), *sc.RunAsUser, "haproxy.securityContext replaces the controller's in the haproxy container")
		require.NotNil(t, sc.Capabilities)
		assert.Equal(t, []corev1.Capability{"NET_BIND_SERVICE"}, sc.Capabilities.Add)
		ctl := r.container(t, "controller").SecurityContext
		require.NotNil(t, ctl)
		assert.Nil(t, ctl.RunAsUser, "the controller keeps its own securityContext")

		r = renderTyped(t, "--set", "haproxy.hostNetwork=true")
		assert.False(t, r.deploy.Spec.Template.Spec.HostNetwork, "no host network without the HAProxy sidecar")
	})

	t.Run("port-collision", func(t *testing.T) {
		helm := requireHelm(t)
		for _, set := range []string{
			"haproxy.ports[0].name=web,haproxy.ports[0].containerPort=9443",  // the webhook's number
			"haproxy.ports[0].name=health,haproxy.ports[0].containerPort=80", // the health port's name
			"haproxy.ports[0].name=a,haproxy.ports[0].containerPort=80,haproxy.ports[1].name=b,haproxy.ports[1].containerPort=80",
		} {
			_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion,
				"--set", "haproxy.enabled=true", "--set", set)
			require.Error(t, err, set)
			assert.Contains(t, err.Error(), "collides", set)
		}
	})
}

// admitsFromAnywhere: a rule of the policy without peers lists the port, by name or number.
func admitsFromAnywhere(np networkingv1.NetworkPolicy, p port) bool {
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) > 0 {
			continue
		}
		for _, rp := range rule.Ports {
			if rp.Port == nil || (rp.Protocol != nil && *rp.Protocol != corev1.ProtocolTCP) {
				continue
			}
			if rp.Port.StrVal == p.name || rp.Port.IntVal == p.num {
				return true
			}
		}
	}
	return false
}

// TestHAProxyScript runs the haproxy container's script with sh, with a
// stand-in haproxy: it waits while haproxy.cfg is missing or empty, then
// execs haproxy with the rendered arguments.
func TestHAProxyScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	cfgDir, runDir, bin := filepath.Join(dir, "cfg"), filepath.Join(dir, "run"), filepath.Join(dir, "bin")
	for _, d := range []string{cfgDir, runDir, bin} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	record := filepath.Join(dir, "haproxy.args")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "haproxy"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > '"+record+".tmp' && mv '"+record+".tmp' '"+record+"'\n"), 0o755))
	// The script polls with sleep: a stand-in sleep counts the polls (one
	// line per call, before it sleeps) and keeps them short.
	realSleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	polls := filepath.Join(dir, "sleep.calls")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "sleep"), []byte("#!/bin/sh\necho \"$@\" >> '"+polls+"'\nexec '"+realSleep+"' 0.05\n"), 0o755))
	pollCount := func() int {
		b, err := os.ReadFile(polls)
		if err != nil {
			return 0
		}
		return strings.Count(string(b), "\n")
	}

	r := renderTyped(t, "-f", "testdata/values-haproxy.yaml", "--set", "haproxy.configDir="+cfgDir, "--set", "haproxy.runDir="+runDir)
	hap := r.container(t, "haproxy")
	require.Equal(t, []string{"/bin/sh", "-c"}, hap.Command)
	require.Len(t, hap.Args, 1)

	cmd := exec.Command(sh, "-c", hap.Args[0])
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{}) // closed when the script ended, with waitErr
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	cfgFile := filepath.Join(cfgDir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfgFile, nil, 0o640)) // empty: not published yet
	// Two more polls: the test of the second one came after the empty file
	// was written (the first may have tested before).
	after := pollCount() + 2
	require.Eventually(t, func() bool {
		_, err := os.Stat(record)
		return pollCount() >= after || err == nil
	}, 30*time.Second, 10*time.Millisecond, "the script does not poll for haproxy.cfg:\n%s", out)
	assert.NoFileExists(t, record, "haproxy started before a configuration was published")
	select {
	case <-done:
		t.Fatalf("the script ended early: %v\n%s", waitErr, out.String())
	default:
	}

	require.NoError(t, os.WriteFile(cfgFile, []byte("global\n"), 0o640))
	select {
	case <-done:
		require.NoError(t, waitErr, out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("haproxy was not started within 10s of the publish:\n%s", out.String())
	}
	b, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, []string{"-W", "-db", "-S", filepath.Join(runDir, "master.sock") + ",mode,660", "-f", cfgFile}, strings.Fields(string(b)))
	assert.Contains(t, out.String(), "waiting for the controller to publish "+cfgFile)
}

// TestImage: both containers run the htc image, whose tag defaults to the
// chart's appVersion; HAProxy therefore always runs the HAProxy that
// checked the configuration. The removed haproxy.image is refused, not
// silently ignored.
func TestImage(t *testing.T) {
	chartYAML, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(chartYAML, &chart))
	require.NotEmpty(t, chart.AppVersion)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default tag is the appVersion", nil, "haproxy-template/htc:" + chart.AppVersion},
		{"tag and repository set", []string{"--set", "image.tag=0.2.0-dev", "--set", "image.repository=registry.example/htc"}, "registry.example/htc:0.2.0-dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderTyped(t, append([]string{"-f", "testdata/values-haproxy.yaml", "--set", "image.pullPolicy=Never"}, tc.args...)...)
			ctl, hap := r.container(t, "controller"), r.container(t, "haproxy")
			assert.Equal(t, tc.want, ctl.Image)
			assert.Equal(t, ctl.Image, hap.Image, "HAProxy runs the controller's image")
			assert.Equal(t, corev1.PullNever, ctl.ImagePullPolicy)
			assert.Equal(t, corev1.PullNever, hap.ImagePullPolicy)
		})
	}

	t.Run("haproxy.image is refused", func(t *testing.T) {
		helm := requireHelm(t)
		_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion,
			"--set", "haproxy.enabled=true", "--set", "haproxy.image.repository=haproxy", "--set", "haproxy.image.tag=2.6")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "haproxy.image was removed: HAProxy runs from the htc image")
	})
}
