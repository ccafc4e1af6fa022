// Forging snapshots as an attacker would: change what a file says (a header field, or a word of
// the allocator state inside a page run) and reseal every checksum, so that the file passes
// verify_snapshot and only the meaning of its contents can betray it.
//
// The words to change are found on a live heap before it is saved (the address of a field of its
// state, of a chunk header, of a page-table entry): a snapshot holds those pages at the same
// addresses, so the address names the word in the file too.
#pragma once

#include <msgpack.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "file_format.h"

namespace reheap::adversarial {

using snaptest::Bytes;

class Forger {
 public:
  explicit Forger(const Bytes& file) : file_(snaptest::decode(file, 4096)) {
    if (!file_.error.empty()) throw std::runtime_error("forger: " + file_.error);
  }

  // The value of the `width`-byte word at zone address `a` (it must lie in a data run).
  std::uint64_t peek(std::uintptr_t a, std::size_t width = 8) const {
    const auto [run, offset] = locate(a, width);
    std::uint64_t v = 0;
    std::memcpy(&v, file_.runs[run].data.data() + offset, width);
    return v;
  }

  // Writes `value` over the `width`-byte word at zone address `a`.
  Forger& poke(std::uintptr_t a, std::uint64_t value, std::size_t width = 8) {
    const auto [run, offset] = locate(a, width);
    std::memcpy(file_.runs[run].data.data() + offset, &value, width);
    return *this;
  }
  template <typename T>
  Forger& poke(const T* field, std::uint64_t value) {
    return poke(reinterpret_cast<std::uintptr_t>(field), value, sizeof(T));
  }
  template <typename T>
  std::uint64_t peek(const T* field) const {
    return peek(reinterpret_cast<std::uintptr_t>(field), sizeof(T));
  }

  // Replaces the header's top-level field `key` by what `edit` makes of it (msgpack objects; the
  // zone keeps new values alive until the header is packed again).
  template <typename Edit>
  Forger& edit_header(const std::string& key, Edit edit) {
    const std::size_t length = file_.header_length;
    msgpack::object_handle handle =
        msgpack::unpack(reinterpret_cast<const char*>(file_.head.data() + 16), length);
    msgpack::object root = handle.get();
    bool found = false;
    for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
      msgpack::object_kv& kv = root.via.map.ptr[i];
      if (kv.key.as<std::string>() == key) {
        edit(kv.val, *handle.zone());
        found = true;
      }
    }
    if (!found) throw std::runtime_error("forger: no header field " + key);
    msgpack::sbuffer packed;
    msgpack::pack(packed, root);
    Bytes head(16 + packed.size());
    std::memcpy(head.data(), file_.head.data(), 16);
    std::memcpy(head.data() + 16, packed.data(), packed.size());
    snaptest::store_le(head, 12, 4, packed.size());
    snaptest::append_le(head, 8, snaptest::xxh3(head.data(), head.size()));
    file_.head = std::move(head);
    file_.header_length = packed.size();
    return *this;
  }
  Forger& set_header(const std::string& key, std::uint64_t value) {
    return edit_header(key, [value](msgpack::object& v, msgpack::zone&) { v = msgpack::object(value); });
  }

  // The file, every checksum recomputed.
  Bytes bytes() const { return snaptest::encode(file_); }

 private:
  struct Place {
    std::size_t run;
    std::size_t offset;
  };
  Place locate(std::uintptr_t a, std::size_t width) const {
    for (std::size_t i = 0; i < file_.runs.size(); ++i) {
      const snaptest::FileRun& r = file_.runs[i];
      if (a >= r.address && a + width <= r.address + r.data.size()) return {i, a - r.address};
    }
    throw std::runtime_error("forger: no data run holds the address " + std::to_string(a));
  }

  snaptest::SnapshotFile file_;
};

}  // namespace reheap::adversarial
