// The CRIU engine of a reheap built without libcriu (pkg-config found no criu): it says so.
#include "reheap/checkpoint_engine.h"

namespace reheap {
namespace {

constexpr const char* kReason =
    "reheap was built without libcriu (pkg-config found no criu when it was configured; on Debian "
    "install the criu and libprotobuf-c-dev packages and rebuild), so whole-process checkpoints are "
    "not supported.";

class NoCriu final : public CheckpointEngine {
 public:
  std::string name() const override { return "CRIU"; }
  CheckpointSupport support() override { return {false, kReason, {}, false, false}; }
  DumpOutcome dump(const DumpRequest&) override { throw CheckpointError(kReason); }
};

}  // namespace

std::shared_ptr<CheckpointEngine> criu_engine() {
  static const std::shared_ptr<CheckpointEngine> instance = std::make_shared<NoCriu>();
  return instance;
}

pid_t restore_process(const std::filesystem::path&, const ProcessRestoreOptions&) { throw CheckpointError(kReason); }

}  // namespace reheap
