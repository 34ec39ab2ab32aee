/*
 * The shared-object canary of the attack corpus. Its constructor runs as soon
 * as anything loads it (dlopen by an OpenSSL provider, a Lua cpath require, a
 * filter, LD_PRELOAD ...) and writes a marker file into MARKER_DIR named
 * so-<pid>, holding the path the object was loaded from (which names the
 * case: every case gets its own copy). The harness compiles it once per run
 * with -DMARKER_DIR="..." and proves it works with a direct haproxy -c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef MARKER_DIR
#error "compile with -DMARKER_DIR=\"/path\""
#endif

__attribute__((constructor)) static void htc_attacks_canary(void)
{
	Dl_info info;
	char path[4096];
	const char *self = "unknown";
	int fd;

	if (dladdr((void *)htc_attacks_canary, &info) && info.dli_fname)
		self = info.dli_fname;
	snprintf(path, sizeof path, "%s/so-%d", MARKER_DIR, (int)getpid());
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd >= 0) {
		(void)!write(fd, self, strlen(self));
		(void)!write(fd, "\n", 1);
		close(fd);
	}
}
