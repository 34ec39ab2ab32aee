package redact

import (
	"os"
	"strings"
)

// harmlessEnv are environment variables whose values are configuration
// everyone may know (the controller's own flags, the shell's basics);
// redacting them would only mangle ordinary words in reasons.
var harmlessEnv = map[string]bool{
	"PATH": true, "HOME": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "TERM": true,
	"SHELL": true, "USER": true, "LOGNAME": true, "LANG": true, "_": true,
}

// ProcessValues returns this process's values that must never leave it:
// its environment values (all but the controller's own HTC_* settings and
// the shell basics above) and dirs (e.g. its temporary directories). The
// host name is in ProcessWords.
func ProcessValues(dirs ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if harmlessEnv[k] || strings.HasPrefix(k, "HTC_") || strings.HasPrefix(k, "LC_") {
			continue
		}
		out = append(out, v)
	}
	return append(out, dirs...)
}

// ProcessWords returns this process's values that must never leave it but
// are redacted only as whole words: its host name, which may be short.
func ProcessWords() []string {
	if h, err := os.Hostname(); err == nil {
		return []string{h}
	}
	return nil
}
