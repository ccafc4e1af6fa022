// One life of a restarted service, as a helper mode of the snapshot test binary: the program a
// test (restart_restore_test.cpp) and tools/restart_cycles.sh run again and again, each run a new
// process, so a new incarnation of its node.
//
//   --restart-cycle <dir> <spawned> <seed>
//       1. creates <spawned> heaps that grow (small blocks, a large block, a huge block) and keeps
//          them alive: the service's other reactors, spawned before its state comes back;
//       2. restores the service's two saved heaps, if a run before saved them: "a" from
//          <dir>/a.snap, which every run replaces, and "b" from the newest <dir>/b-<k>.snap, which
//          every run saves under a new name before it deletes the old one with remove_snapshot;
//          checks each against the check value saved inside it;
//       3. grows and shrinks both (a new block of up to 3 MiB, the oldest freed, notes changed),
//          saves them, and saves then deletes (std::filesystem::remove, as an operator would) a
//          scratch heap's snapshot.
//       Prints "incarnation <i> spawned <n> restored <r> held <h>" and exits 0; exits 3 after
//       printing "collision: <message>" if a restore failed with kRangeInUse, 1 on any other
//       failure.
#pragma once

namespace reheap::snaptest {

// Runs the mode; returns the exit status.
int restart_cycle(int argc, char** argv);

}  // namespace reheap::snaptest
