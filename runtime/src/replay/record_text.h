// Readable text for a replay's reports: an answer or output record as the recording holds it or
// as the replayed hook made it, payloads included (msgpack decoded and printed as JSON-like text,
// raw bytes in hex), so that a Divergence reads as "expected this, got that".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "reheap/message.h"
#include "reheap/recording_log.h"

namespace reheap::detail::replay {

// "send to reactor 5: type 0x…, msgpack, 12 bytes: [1, \"abc\"] -> kOk", "now()", ...
// `with_answer`: append what the runtime answered (a recorded record has it; an actual call's
// record does not yet).
std::string describe_record(const LogRecord& record, bool with_answer);

// A payload as text: msgpack decoded, raw and system bytes in hex (at most 64 of them shown).
std::string render_payload(Encoding encoding, const void* data, std::size_t size);

// A recorded message type id as a report shows it: "0x<16 hex digits>", and the C++ type's name
// when a type of this program has that id ("0x... (bank::Deposit)").
std::string type_text(std::uint64_t type_id);

}  // namespace reheap::detail::replay
