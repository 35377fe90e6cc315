#include "storage/freeblock_tier.hpp"

namespace vigil::storage {

FreeblockTier::FreeblockTier(const HddModel& model, std::size_t alignment, FreeblockTierConfig config)
    : config_(config), planner_(model, config.planner), alignment_(alignment), wanted_(model) {}

void FreeblockTier::want(std::uint64_t offset, std::uint64_t bytes) {
  const std::lock_guard lock(mu_);
  wanted_.want(offset, bytes);
}

void FreeblockTier::unwant(std::uint64_t offset, std::uint64_t bytes) {
  const std::lock_guard lock(mu_);
  wanted_.take(offset, bytes);
}

void FreeblockTier::set_sink(Sink sink) {
  const std::lock_guard lock(mu_);
  sink_ = std::move(sink);
}

std::uint64_t FreeblockTier::wanted_sectors() const {
  const std::lock_guard lock(mu_);
  return wanted_.remaining();
}

std::optional<FreeblockRead> FreeblockTier::plan(HeadPosition from, Nanos now, std::uint64_t offset,
                                                 std::size_t bytes) {
  const std::lock_guard lock(mu_);
  if (!config_.rotational || wanted_.remaining() == 0) return std::nullopt;
  auto read = planner_.plan(from, now, offset, bytes, wanted_);
  if (!read) return std::nullopt;
  std::uint64_t first = (read->offset + alignment_ - 1) / alignment_ * alignment_;
  // Rounded up, the read may start where the last command ended: the drive would serve it from
  // its read-ahead, whose timing the plan does not predict. It starts a block later then.
  if (planner_.model().continues_read_ahead(first)) first += alignment_;
  const std::uint64_t end = (read->offset + read->bytes) / alignment_ * alignment_;
  if (end <= first) return std::nullopt;
  const std::uint32_t sector = planner_.model().geometry().sector_bytes;
  if (first != read->offset || end != read->offset + read->bytes) {
    const auto b_end = planner_.verify(from, now, offset, bytes, first, static_cast<std::size_t>(end - first));
    if (!b_end) return std::nullopt;
    read->foreground_end = *b_end;
  }
  read->offset = first;
  read->bytes = static_cast<std::size_t>(end - first);
  read->wanted_sectors = wanted_.count(first / sector, end / sector);
  if (read->wanted_sectors == 0) return std::nullopt;
  return read;
}

std::span<std::byte> FreeblockTier::buffer(std::size_t bytes) {
  if (buf_.size() < bytes) buf_ = AlignedBuffer(bytes, alignment_);  // once per larger track
  return buf_.span().first(bytes);
}

std::pair<std::uint64_t, std::size_t> FreeblockTier::prepend(std::uint64_t offset) {
  const std::lock_guard lock(mu_);
  if (config_.prepend_max_bytes < alignment_ || wanted_.remaining() == 0 || offset % alignment_ != 0)
    return {offset, 0};
  const std::uint32_t sector = planner_.model().geometry().sector_bytes;
  const auto per_block = static_cast<std::uint32_t>(alignment_ / sector);
  std::uint64_t first = offset;
  while (first >= alignment_ && offset - first + alignment_ <= config_.prepend_max_bytes &&
         wanted_.count((first - alignment_) / sector, first / sector) == per_block) {
    first -= alignment_;
  }
  return {first, static_cast<std::size_t>(offset - first)};
}

void FreeblockTier::delivered(std::uint64_t offset, std::size_t bytes, bool prepended) {
  Sink sink;
  {
    const std::lock_guard lock(mu_);
    wanted_.take(offset, bytes);
    sink = sink_;
  }
  (prepended ? prepend_reads_ : reads_).fetch_add(1, std::memory_order_relaxed);
  (prepended ? prepend_bytes_ : bytes_).fetch_add(bytes, std::memory_order_relaxed);
  if (sink) sink(offset, std::span<const std::byte>(buf_.data(), bytes));
}

}  // namespace vigil::storage
