// Helper modes for held_for_restore_test.cpp: processes of a node with a state directory (the
// test sets REHEAP_STATE_DIR and REHEAP_NODE), each a new incarnation. Every mode prints what it
// found on stdout, one "key value" per line, and exits 0, or prints "failed: <why>" and exits 1.
//
//   --held same-process <dir>   saves a heap to <dir>/s.snap and destroys it, with no quarantine and
//                               no heap cache; creates heaps (none may take the saved chunk); restores
//                               the file; destroys it and remove_snapshot()s the file: the next heap
//                               takes the chunk.
//   --held save <file>...       saves a new heap to each file (held-chunks, then "saved").
//   --held compact <from> <to>  creates a heap, then compacts <from> into <to>.
//   --held start                creates one heap; prints "held <n>" (or "refused" if it could not).
//   --held restore <file>...    creates three heaps, then restores each file.
//   --held renames <dir> <n> <remove|delete>
//                               n times: a new heap saved under a new name, the previous file deleted
//                               with remove_snapshot ("remove") or std::filesystem::remove
//                               ("delete"), the heap destroyed; prints the held chunks at the end.
#pragma once

namespace reheap::snaptest {

// Runs the mode; returns the exit status.
int held_helper(int argc, char** argv);

}  // namespace reheap::snaptest
