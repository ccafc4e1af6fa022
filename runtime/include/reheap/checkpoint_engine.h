// Checkpoint engines: what dumps a whole process for Runtime::checkpoint_process.
//
// Per-reactor snapshots (snapshot.h, Runtime::snapshot) save one reactor's heap without stopping
// the others and without privileges. A whole-process checkpoint saves everything at once, kernel
// state included (sockets, the process tree), to move a service to another host or warm-start it.
// Runtime::checkpoint_process brings the runtime to a barrier and hands the dump to an engine:
//
//   criu_engine()          CRIU through libcriu, when reheap was built with it (pkg-config criu;
//                          Debian's `criu` package) and this machine can run it. Detected once:
//                          libcriu, the criu binary's version, `criu check`, its memory-tracking
//                          feature and the privileges (root, or CAP_CHECKPOINT_RESTORE and
//                          CAP_SYS_PTRACE); whatever is missing is one sentence in
//                          CheckpointSupport::reason. Known here: Debian 12's CRIU 3.17.1 fails on
//                          Linux 6.18 (it misreads the vDSO; fixed in CRIU 4.1), and works on
//                          Debian 12's own 6.1 kernel.
//   SimulatedCheckpoint    (simulated_checkpoint.h) pauses and checks the barrier without dumping:
//                          how the coordination is tested where CRIU cannot run.
//
// An engine's dump() runs on the thread that called checkpoint_process, with every worker parked
// and write tracking suspended. It returns kDumped in the process that goes on, and kRestored
// when it returns in a process restored from the dump (libcriu's criu_dump does both).
//
// restore_process() restores a CRIU dump as a child of the caller. CRIU gives the restored
// process its old PID, so restore after the original has exited, or in a new PID namespace;
// otherwise the restore fails with the PID in use.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace reheap {

struct CheckpointSupport {
  bool available = false;
  std::string reason;            // when not available: one sentence a user can act on
  std::string version;           // the engine's, e.g. "CRIU 3.17.1"
  bool memory_tracking = false;  // CRIU's dirty-memory tracking (for pre-dumps)
  bool tcp_repair = false;       // established TCP connections can be dumped (CAP_NET_ADMIN)
};

struct DumpRequest {
  std::filesystem::path directory;   // created if missing; the engine's images and log go there
  bool keep_established_tcp = false;  // dump established connections (TCP_REPAIR)
  bool leave_running = true;          // false: the dumped process is killed by the dump
  int workers = 0;                    // the runtime's workers, all parked at the barrier
};

enum class DumpOutcome { kDumped, kRestored };

// A checkpoint that cannot be taken, or an engine that cannot run; what() says why.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CheckpointEngine {
 public:
  virtual ~CheckpointEngine() = default;
  virtual std::string name() const = 0;
  // Cached after the first call; thread-safe.
  virtual CheckpointSupport support() = 0;
  // Throws CheckpointError if the dump failed (the process then goes on as if not dumped).
  virtual DumpOutcome dump(const DumpRequest& request) = 0;
};

// The process's CRIU engine (one instance). Without libcriu at build time its support() says so.
std::shared_ptr<CheckpointEngine> criu_engine();

struct ProcessRestoreOptions {
  bool keep_established_tcp = false;  // as the dump was taken
};

// Restores the process dumped into `directory` as a child of the caller and returns its PID.
// Throws CheckpointError (CRIU unavailable, or the restore failed: the message names the log).
pid_t restore_process(const std::filesystem::path& directory, const ProcessRestoreOptions& options = {});

}  // namespace reheap
