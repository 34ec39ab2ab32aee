package image

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDockerfileMatchesMakeImage checks that the Dockerfile (for machines
// with a Docker daemon, not built here) describes the image `make image`
// builds: same Debian release and HAProxy pin, same user, entrypoint,
// writable directory, build flags and label keys. It reads the recipes as
// text, so it runs everywhere.
func TestDockerfileMatchesMakeImage(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		return string(b)
	}
	docker := read("Dockerfile")
	rootfs := read("hack/haproxy-rootfs.sh")
	img := read("hack/image.sh")
	mk := read("Makefile")
	gomod := read("go.mod")

	one := func(t *testing.T, re, text, what string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		require.NotNil(t, m, "%s: no match for %s", what, re)
		return m[1]
	}

	suite := one(t, `(?m)^SUITE=(\S+)$`, rootfs, "haproxy-rootfs.sh")
	assert.Contains(t, docker, "\nFROM debian:"+suite+"-slim\n", "the runtime stage is Debian %s", suite)
	assert.Regexp(t, `(?m)^FROM golang:\$\{GO_VERSION\}-`+suite+` AS build$`, docker)

	pin := one(t, `(?m)^HAPROXY_PACKAGE='([^']+)'$`, rootfs, "haproxy-rootfs.sh")
	assert.Equal(t, "haproxy=3.0.*", pin, "htc ships HAProxy 3.0 LTS")
	assert.Contains(t, docker, "'"+pin+"'", "the Dockerfile installs the same haproxy")

	uid := one(t, `(?m)^HTC_UID=(\d+)$`, rootfs, "haproxy-rootfs.sh")
	assert.Equal(t, uid, one(t, `(?m)^HTC_UID=(\d+)$`, img, "image.sh"))
	assert.Contains(t, docker, "\nUSER "+uid+":"+uid+"\n")
	passwd := strings.ReplaceAll(one(t, `echo '(htc:x:[^']+:/usr/sbin/nologin)'`, rootfs, "haproxy-rootfs.sh"), "$HTC_UID", uid)
	assert.Contains(t, docker, "'"+passwd+"' >>/etc/passwd")
	group := strings.ReplaceAll(one(t, `echo '(htc:x:\$HTC_UID:)'`, rootfs, "haproxy-rootfs.sh"), "$HTC_UID", uid)
	assert.Contains(t, docker, "'"+group+"' >>/etc/group")

	entry := one(t, `--config\.entrypoint (\S+)`, img, "image.sh")
	assert.Contains(t, docker, `ENTRYPOINT ["`+entry+`"]`)
	assert.Contains(t, img, "install -m 0755 \"$BINARY\" \"$WORK/layer"+entry+"\"")
	assert.Contains(t, docker, "COPY --from=build /out/htc "+entry+"\n")

	assert.Contains(t, img, "--config.env TMPDIR=/tmp")
	assert.Contains(t, img, "--config.workingdir /tmp")
	assert.Contains(t, img, "--config.volume /tmp")
	for _, l := range []string{"ENV TMPDIR=/tmp", "WORKDIR /tmp", "VOLUME /tmp"} {
		assert.Contains(t, docker, "\n"+l+"\n")
	}

	// The same static build with the Makefile's version ldflags.
	ldflags := one(t, `(?m)^LDFLAGS := (.+)$`, mk, "Makefile")
	assert.Equal(t, "-X main.version=$(VERSION) -X main.revision=$(REVISION)", ldflags)
	assert.Contains(t, mk, `CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)"`)
	dockerLD := strings.NewReplacer("$(VERSION)", "${VERSION}", "$(REVISION)", "${REVISION}").Replace(ldflags)
	assert.Contains(t, docker, `CGO_ENABLED=0 go build -trimpath -ldflags "-s -w `+dockerLD+`"`)
	goMod := one(t, `(?m)^go (\d+\.\d+)`, gomod, "go.mod")
	assert.Equal(t, goMod, one(t, `(?m)^ARG GO_VERSION=(\S+)$`, docker, "Dockerfile"), "the build stage's Go is go.mod's")

	labelKeys := func(re, text string) []string {
		var keys []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(text, -1) {
			keys = append(keys, m[1])
		}
		sort.Strings(keys)
		return keys
	}
	fromImage := labelKeys(`"(org\.opencontainers\.image\.[a-z.]+)=`, img)
	require.NotEmpty(t, fromImage)
	assert.Equal(t, fromImage, labelKeys(`(org\.opencontainers\.image\.[a-z.]+)="`, docker), "the same org.opencontainers.image labels")
}
