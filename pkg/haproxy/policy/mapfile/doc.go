// Package mapfile reads map and pattern files as HAProxy 3.0 does
// (pat_ref_read_from_file and pat_ref_read_from_file_smp, src/pattern.c):
// fgets() into a 16384-byte buffer, so a long line is read in pieces of
// LineMax bytes, each parsed as a line of its own.
//
// A map of the package (read.go):
//
//   - Entries: the entries HAProxy reads from a map file, in order.
//   - LineProblem: how HAProxy would misread one line of a file read the
//     ways Use says (a map, a pattern file), "" when it reads it as
//     written; the policy reports it for every line of every map.
//
// The tests compare the reader with haproxy itself
// (TestMapReaderAgainstHAProxy30, TestMapReaderBoundariesAgainstHAProxy30)
// and fuzz LineProblem against an independent model of the reader
// (FuzzMapEntry).
package mapfile
