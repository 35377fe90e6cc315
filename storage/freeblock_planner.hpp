#pragma once
// Freeblock planning on the simulated hard disk: tier 3 of the background broker (research note
// §5.3; docs/freeblock.md). Before the next foreground request B the head waits on B's track for
// B's first sector (B's rotational latency). The planner fills that wait with one background
// read, on the source track, on B's track, or on a third track whose extra seek still leaves
// time, so that B's transfer starts when it would have anyway: the background bandwidth is free.
//
// Seed 003 §4: greedy over tracks, the most wanted sectors in the opportunity; source and
// destination tracks first, then ascending extra seek; tracks pruned when their wanted count, or
// the window left after their extra seek, cannot beat the best found. Seed 000 §3.3: a margin
// ("conservatism", 0.3 ms) between the predicted end of the background read's influence and B's
// transfer, and one command per track (separate commands on one track set off firmware prefetch).
//
// The model is exact in virtual time (no jitter), so every plan is checked against
// HddModel::predict: B's completion after the background read is never later than without it.
// Thread: any (the planner and the wanted set are plain values; the model is only read).
// Errors: none (nothing to plan is nullopt).
#include <cstdint>
#include <optional>
#include <vector>

#include "storage/hdd_model.hpp"

namespace vigil::storage {

// The sectors a background task still wants (seed 000 §4.2: "a bitmap of sectors not yet
// read"), with a count per track for the planner's pruning.
class FreeblockWanted {
 public:
  explicit FreeblockWanted(const HddModel& model);

  void want(std::uint64_t offset, std::uint64_t bytes);  // the sectors covering it
  void want_all() { want(0, total_sectors_ * sector_bytes_); }
  // Marks the sectors covering [offset, offset + bytes) read; returns how many of them were wanted.
  std::uint64_t take(std::uint64_t offset, std::uint64_t bytes);

  std::uint64_t remaining() const noexcept { return remaining_; }  // sectors
  std::uint32_t on_track(HeadPosition track) const noexcept;
  bool wanted(std::uint64_t sector) const noexcept { return (bits_[sector / 64] >> (sector % 64)) & 1U; }
  std::uint32_t count(std::uint64_t first_sector, std::uint64_t end_sector) const noexcept;

 private:
  template <class Fn>
  std::uint64_t per_track(std::uint64_t offset, std::uint64_t bytes, Fn&& on_sector);

  const HddModel& model_;
  std::uint32_t sector_bytes_, heads_;
  std::uint64_t total_sectors_;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> per_track_;
  std::uint64_t remaining_ = 0;
};

struct FreeblockConfig {
  Nanos margin{300'000};     // seed 000 Fig. 8: < 2 % foreground impact at 0.3 ms on a real disk
  bool third_tracks = true;  // false: only the source and destination tracks
  // The search's cut-off (seed 003 stops searching when the current foreground request completes):
  // at most this many tracks examined per plan (0: no bound). The source and destination tracks
  // are examined first, so a bound of 2 is "source and destination only"; the best read found
  // within the bound is planned, so the bound costs free bandwidth, never exactness.
  std::uint32_t max_tracks_examined = 0;
};

// The background read to issue before the foreground request, and what the planner predicts.
struct FreeblockRead {
  std::uint64_t offset = 0;  // sector-aligned
  std::size_t bytes = 0;     // one command, one track
  std::uint32_t wanted_sectors = 0;
  HeadPosition track;
  Nanos opportunity{0};     // B's rotational latency from the head's place
  Nanos extra_seek{0};      // what reaching the track costs beyond the move to B (0: source/destination)
  Nanos foreground_end{0};  // B's predicted completion after the read (never later than without it)
};

struct FreeblockSearchStats {
  std::uint32_t tracks_examined = 0;
  bool cut_off = false;  // the search stopped at FreeblockConfig::max_tracks_examined
};

class FreeblockPlanner {
 public:
  explicit FreeblockPlanner(const HddModel& model, FreeblockConfig config = {}) : model_(model), config_(config) {}

  // The heads at FROM, the disk free at NOW, the next foreground access of BYTES at OFFSET (a
  // read that does not continue the read-ahead, or a durable write: HddModel::predict's terms).
  std::optional<FreeblockRead> plan(HeadPosition from, Nanos now, std::uint64_t offset, std::size_t bytes,
                                    const FreeblockWanted& wanted, FreeblockSearchStats* stats = nullptr) const;

  // The same exact check for a read chosen elsewhere (FreeblockTier trims a plan to whole device
  // blocks): B's predicted completion after a background read of READ_BYTES at READ_OFFSET, if
  // that read leaves B's transfer where it was (with the margin); else nullopt.
  std::optional<Nanos> verify(HeadPosition from, Nanos now, std::uint64_t offset, std::size_t bytes,
                              std::uint64_t read_offset, std::size_t read_bytes) const;

  const FreeblockConfig& config() const noexcept { return config_; }
  const HddModel& model() const noexcept { return model_; }

 private:
  struct Goal {
    HeadPosition from;
    Nanos now, transfer_start, end;  // B's, without a background read
    std::uint64_t offset;
    std::size_t bytes;
  };
  // The best read on TRACK arriving at ARRIVE and done by LEAVE_BY, checked exactly against GOAL.
  std::optional<FreeblockRead> on_track(const Goal& goal, HeadPosition track, Nanos arrive, Nanos leave_by,
                                        const FreeblockWanted& wanted) const;
  std::optional<FreeblockRead> checked(const Goal& goal, const HddTrack& track, std::uint32_t first, std::uint32_t end,
                                       const FreeblockWanted& wanted) const;

  const HddModel& model_;
  FreeblockConfig config_;
};

}  // namespace vigil::storage
