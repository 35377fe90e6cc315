#pragma once
// The contract between the cycle scheduler and a stream (docs/scheduler.md): once per cycle
// the scheduler asks each admitted stream for its stream IO — T·BR bytes to write from the
// full half of its double buffer (recording) or to read into the empty half (playback) — and
// tells it when that IO finished. The IO may come in two pieces when it crosses an extent.
// Thread: both calls run on the disk's IO thread; implementations synchronise with the
// network side themselves and must never block.
#include <cstdint>
#include <span>
#include <vector>

#include "common/errors.hpp"

namespace vigil::storage {

struct IoPiece {
  std::uint64_t offset = 0;    // device offset, block-aligned
  std::span<std::byte> buf{};  // block-aligned; written from (write) or read into (read)
};

struct StreamIo {
  bool write = false;
  std::vector<IoPiece> pieces{};      // empty: no IO this cycle (see skip_reason)
  const char* skip_reason = nullptr;  // e.g. "consumer_stalled", "no_data"; not a miss
  // A write whose completion the stream acknowledges to its writer: finished() is called only
  // once the data is on stable storage (the scheduler issues one flush after the sweep's
  // writes, covering every durable write of the cycle).
  bool durable = false;
  std::uint64_t bytes() const noexcept {
    std::uint64_t n = 0;
    for (const auto& p : pieces) n += p.buf.size();
    return n;
  }
};

class CycleStream {
 public:
  virtual ~CycleStream() = default;
  // The stream IO for cycle CYCLE (called at the cycle's start, or at once for a new stream).
  virtual StreamIo prepare(std::uint64_t cycle) = 0;
  // The IO returned by prepare(CYCLE) completed (or failed). Called exactly once per
  // non-empty prepare().
  virtual void finished(std::uint64_t cycle, Result<void> result) = 0;
};

}  // namespace vigil::storage
