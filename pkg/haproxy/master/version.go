package master

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// versionAnswer is an answer of `show version`: one version token, such as
// "3.0.11-1+deb13u5".
var versionAnswer = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~_-]*$`)

// Version returns the version of the HAProxy behind the socket: the master's
// answer to `show version` (HAProxy 3.0), or, from a master that does not
// know that command, the version column of its line in `show proc`. After a
// reload the master runs the binary its workers were started from.
func (c *Client) Version(ctx context.Context) (string, error) {
	out, err := c.Command(ctx, "show version")
	if err != nil {
		return "", err
	}
	if v := strings.TrimSpace(out); versionAnswer.MatchString(v) {
		return v, nil
	}
	st, err := c.ShowProc(ctx)
	if err != nil {
		return "", err
	}
	if st.Master.Version == "" {
		return "", fmt.Errorf("master socket %s: neither show version nor show proc says the version", c.SocketPath)
	}
	return st.Master.Version, nil
}
