#pragma once
// Tiers 2 and 3 of the background broker (research note §5.3; docs/freeblock.md, "Tiers 2 and 3
// in the cycle scheduler"): on the simulated hard disk, the sectors the broker's any-order tasks
// still want are read inside the rotational latency before a foreground command, for free (tier
// 3), or else, before a stream read, the wanted blocks that end where it begins (tier 2). The
// scheduler asks plan() (then prepend()) before each foreground access that starts a new
// position, issues the read just ahead of that command (the disk runs them in order), and hands
// the data back with delivered(); the broker, through the sink, gives each task its share and
// stops wanting it.
//
// The planner is exact against HddModel::predict, which holds only when no cache is involved, so
// the scheduler plans only before a read that does not continue the read-ahead or a durable
// write with no write-back pending: a buffered write completes at bus rate, and a read issued
// ahead of it would be paid for by the stream.
// Thread: want/unwant/set_sink from any thread (a mutex held for a bitmap update or one plan);
// plan/buffer/delivered on the IO thread. The sink runs on the IO thread without the mutex held,
// so it may call unwant. Errors: none (no plan is nullopt).
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "storage/device.hpp"
#include "storage/freeblock_planner.hpp"
#include "storage/hdd_model.hpp"

namespace vigil::storage {

struct FreeblockTierConfig {
  bool rotational = true;  // tier 3: reads inside the rotational latency
  // Tier 2 (seed 000 §3.3, research note §5.3): at most this much of a wanted run that ends where
  // a stream read begins is read just ahead of it, so the stream's read continues the drive's
  // read-ahead. It costs the run's transfer, charged to the cycle's background budget and slack.
  // 0: off, the default: beside cycle-ordered playback it moves background transfer into the
  // sweep, so the streams finish later and tier 1 gets less of the slack than the prepends take
  // (`vigil bench freeblock` part E: scrub rate x0.89, stream p99 +21 %); where it is free, tier 3
  // already reads the same blocks (B's destination track).
  std::size_t prepend_max_bytes = 0;
  FreeblockConfig planner{};
};

class FreeblockTier {
 public:
  // OFFSET, DATA: bytes read for free (sector multiples, one track at most).
  using Sink = std::function<void(std::uint64_t offset, std::span<const std::byte> data)>;

  // ALIGNMENT: the device's block (a multiple of the model's sector): a planned read is trimmed
  // to whole blocks inside it, which only ends it sooner, so the foreground is still not delayed.
  explicit FreeblockTier(const HddModel& model, std::size_t alignment = 4096, FreeblockTierConfig config = {});
  FreeblockTier(const FreeblockTier&) = delete;
  FreeblockTier& operator=(const FreeblockTier&) = delete;

  void want(std::uint64_t offset, std::uint64_t bytes);    // the sectors covering it
  void unwant(std::uint64_t offset, std::uint64_t bytes);  // read another way, or no longer wanted
  void set_sink(Sink sink);
  std::uint64_t wanted_sectors() const;
  const FreeblockTierConfig& config() const noexcept { return config_; }

  // --- IO thread ---
  // Tier 3: the read to issue before a foreground access of BYTES at OFFSET with the heads at
  // FROM and the disk free at NOW, or nullopt (nothing wanted fits the rotational latency).
  std::optional<FreeblockRead> plan(HeadPosition from, Nanos now, std::uint64_t offset, std::size_t bytes);
  // Tier 2: the whole blocks ending at OFFSET that are all wanted, at most prepend_max_bytes
  // (bytes 0: none). First = their offset.
  std::pair<std::uint64_t, std::size_t> prepend(std::uint64_t offset);
  // Where a planned read of BYTES lands (aligned; valid until the next call; grows to a track).
  std::span<std::byte> buffer(std::size_t bytes);
  // A read of BYTES at OFFSET completed into buffer(): its sectors are no longer wanted, and the
  // sink gets them. PREPENDED: tier 2's (counted apart).
  void delivered(std::uint64_t offset, std::size_t bytes, bool prepended = false);

  std::uint64_t reads() const noexcept { return reads_.load(std::memory_order_relaxed); }  // tier 3
  std::uint64_t bytes_read() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t prepend_reads() const noexcept { return prepend_reads_.load(std::memory_order_relaxed); }
  std::uint64_t prepend_bytes() const noexcept { return prepend_bytes_.load(std::memory_order_relaxed); }

 private:
  FreeblockTierConfig config_;
  FreeblockPlanner planner_;
  std::size_t alignment_;
  mutable std::mutex mu_;
  FreeblockWanted wanted_;  // guarded by mu_
  Sink sink_;               // guarded by mu_ (copied out before it runs)
  AlignedBuffer buf_;
  std::atomic<std::uint64_t> reads_{0}, bytes_{0}, prepend_reads_{0}, prepend_bytes_{0};
};

}  // namespace vigil::storage
