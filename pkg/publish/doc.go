// Package publish writes a checked bundle.Bundle into the output directory
// HAProxy reads: haproxy.cfg at its root, maps/, files/ and certs/ beside it.
//
// # What is atomic
//
// Each file is replaced atomically: its new content is written to a temporary
// file (".htc-tmp-…") in the same directory, synced to disk, given its mode
// and renamed over the target. A reader opening a file sees either the whole
// old or the whole new content, never a mix or a truncated file. Files whose
// content is already right are not touched at all (no rename, mtime kept).
//
// The set of files is not replaced atomically; it is kept consistent by
// order. Publish writes maps, files and certificates first and haproxy.cfg
// last, so haproxy.cfg never references a file that is not there yet, and
// only then removes stale files (those under maps/, files/ and certs/ that
// the bundle no longer has) and the directories they leave empty. HAProxy
// reads the files only when it is (re)loaded, so the controller reloads it
// after Publish returns. Between two files a crash can leave a mix of old
// and new files on disk; the next Publish completes it.
//
// The one exception to that order: when a bundle file needs a path that is
// taken by a stale entry of the other kind (map "a" became "a/b", or the
// other way round), the stale entry is removed before the writes, because
// the new file cannot be placed otherwise.
//
// # Ownership
//
// maps/, files/ and certs/ belong to htc: any regular file or symbolic link
// in them that the bundle does not have is removed. At the root of the
// directory only haproxy.cfg and leftover ".htc-tmp-…" files from an
// interrupted run are touched; everything else there (a master socket, a
// pid file, notes) stays. Names whose path segment starts with ".htc-tmp-"
// are refused, as are names bundle.CheckName refuses, before anything is
// written.
//
// # Modes
//
// Files are written 0640 and directories created 0750, independent of the
// umask; existing files and directories on the bundle's paths are set to
// those modes too. The HAProxy container reads them through a shared group;
// certificates hold private keys, so nothing is readable by others. The
// output directory itself, when Open creates it, is made 0750 (minus umask);
// an existing one keeps its mode.
//
// # Safety
//
// Every access goes through an os.Root opened on the directory, so no name
// and no symbolic link can make Publish read, write or remove anything
// outside it. maps/, files/ and certs/ must be real directories (or absent),
// and a symbolic link where a bundle file needs a directory is an error.
//
// # Rollback
//
// Publish returns a Result recording what it changed; Result.Rollback puts
// the previous contents back (each file again atomically), removes files
// Publish added and restores files it removed, for when HAProxy refuses the
// new configuration. When Publish itself fails midway it rolls back what it
// had already done before returning the error.
//
// A Dir is not safe for concurrent Publish calls (nor Publish concurrent
// with Rollback); the controller publishes from one loop. The package has no
// global state.
package publish
