package haproxy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// outputPatterns are the compiled expressions SimplifyOutput uses. They are
// built per call (cheap next to running haproxy) so the package keeps no
// mutable global state.
type outputPatterns struct {
	prefix   *regexp.Regexp
	location *regexp.Regexp
	suggest  *regexp.Regexp
	spaces   *regexp.Regexp
}

func newOutputPatterns() outputPatterns {
	return outputPatterns{
		// "[ALERT]    (1234) : ", optionally with a "123/456789" timestamp.
		prefix: regexp.MustCompile(`^\[(ALERT|WARNING|NOTICE|DIAG)\]\s*(?:\d+/\d+\s*)?(?:\(\d+\)\s*)?:\s*`),
		// "parsing [file:12] : " or "[file:12] : " or "parsing [file:12]: ".
		location: regexp.MustCompile(`^(?:[Pp]arsing\s*)?\[([^\]\s]+):(\d+)\]\s*:?\s*`),
		// "; did you mean 'x' maybe ?"
		suggest: regexp.MustCompile(`;?\s*did you mean .* maybe\s*\?$`),
		spaces:  regexp.MustCompile(`\s+`),
	}
}

// noise reports whether a message (after the level prefix and "config :")
// carries no information beyond the other messages.
func noise(msg string) bool {
	for _, p := range []string{
		"Fatal errors found in configuration",
		"Error(s) found in configuration file",
		"Failed to initialize server(s) addr",
		"haproxy version is ",
		"path to executable is ",
		"Warnings were found",
		"Configuration file is valid",
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// SimplifyOutput reduces the raw output of `haproxy -c` run on a bundle in
// baseDir to short messages: errors from [ALERT] lines and warnings from
// [WARNING] lines. It drops the level, PID and timestamp prefix, the
// "config :" framing, HAProxy's summary lines ("Fatal errors found in
// configuration.", ...), echoed configuration lines and "did you mean"
// suggestions; it rewrites "parsing [/dir/haproxy.cfg:10] : msg" to
// "haproxy.cfg:10: msg" and every path under baseDir to its bundle-relative
// form (maps/host.map), and any other path under the temporary directory to
// its base name. Duplicates are removed; order is kept.
func SimplifyOutput(out, baseDir string) (errs, warnings []string) {
	pat := newOutputPatterns()
	seen := make(map[string]bool)
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r \t")
		m := pat.prefix.FindStringSubmatch(line)
		if m == nil {
			continue // continuation lines echo configuration text
		}
		level := m[1]
		if level != "ALERT" && level != "WARNING" {
			continue
		}
		msg := simplifyMessage(pat, line[len(m[0]):], baseDir)
		if msg == "" || noise(msg) {
			continue
		}
		key := level + "\x00" + msg
		if seen[key] {
			continue
		}
		seen[key] = true
		if level == "ALERT" {
			errs = append(errs, msg)
		} else {
			warnings = append(warnings, msg)
		}
	}
	return errs, warnings
}

// simplifyMessage simplifies one message after its level prefix.
func simplifyMessage(pat outputPatterns, msg, baseDir string) string {
	msg = strings.TrimSpace(msg)
	msg = strings.TrimSpace(strings.TrimPrefix(msg, "config :"))
	if noise(msg) {
		return ""
	}
	if m := pat.location.FindStringSubmatch(msg); m != nil {
		msg = relPath(m[1], baseDir) + ":" + m[2] + ": " + msg[len(m[0]):]
	}
	msg = replacePaths(msg, baseDir)
	msg = pat.suggest.ReplaceAllString(msg, "")
	msg = pat.spaces.ReplaceAllString(msg, " ")
	msg = strings.TrimSpace(msg)
	msg = strings.TrimSuffix(msg, ".")
	return msg
}

// relPath makes a path reported by haproxy bundle-relative.
func relPath(p, baseDir string) string {
	if baseDir != "" {
		clean := filepath.Clean(baseDir)
		if strings.HasPrefix(p, clean+"/") {
			return strings.TrimPrefix(p, clean+"/")
		}
	}
	return replacePaths(p, baseDir)
}

// replacePaths rewrites every occurrence of baseDir in s to bundle-relative
// form and hides other temporary paths behind their base names.
func replacePaths(s, baseDir string) string {
	if baseDir != "" {
		clean := filepath.Clean(baseDir)
		s = strings.ReplaceAll(s, clean+"/", "")
		s = strings.ReplaceAll(s, clean, ".")
	}
	for _, tmp := range tempDirs() {
		for {
			i := strings.Index(s, tmp+"/")
			if i < 0 {
				break
			}
			j := i + len(tmp) + 1
			for j < len(s) && !strings.ContainsRune(" \t'\"<>[](),;:", rune(s[j])) {
				j++
			}
			s = s[:i] + filepath.Base(s[i:j]) + s[j:]
		}
	}
	return s
}

// tempDirs lists the temporary directories whose paths never appear in a
// simplified message.
func tempDirs() []string {
	dirs := []string{"/tmp", "/var/tmp"}
	if t := filepath.Clean(os.TempDir()); t != "/tmp" && t != "/var/tmp" && t != "/" {
		dirs = append(dirs, t)
	}
	return dirs
}
