#pragma once
// A playback stream (docs/scheduler.md, "Playback"; thesis §2.4.1): the read side of the double
// buffer. Once per cycle the scheduler asks it for its stream IO, and it answers with whole GOPs
// of the requested range — never more than one cycle's budget (T × the admitted playback rate)
// unless a single GOP is larger — so a playback takes exactly the disk time admission charged
// for it, whatever the recording's real bit rate turns out to be. Each GOP read is verified
// record by record (CRC, sequence) on the IO thread and handed to the network side as frames
// that point into the read buffers: the payload is never copied.
//
// Double buffering: while the network side still holds a cycle's worth of unsent GOPs, the
// stream skips its IO ("consumer_stalled") — the IO thread never waits for a viewer. Memory is
// bounded by 2 × cycle_bytes plus one GOP.
//
// Keyframes-only (fast-forward, reverse): only the keyframe record of each GOP is read. Its
// size is not in the GOP index, so the read length is an estimate (the whole first GOP, then
// twice the largest keyframe seen); a keyframe longer than the estimate is read again whole in
// the next cycle. Reverse is always keyframes-only: inter frames cannot be decoded backwards.
// A damaged GOP is never served: it becomes a gap entry instead.
// Thread: prepare()/finished() by one driver at a time — the disk's IO thread for a real-time
// playback, or a ClipReader (server/) that issues the same pieces as interactive requests and
// calls both from its own thread; pop()/done() on the session's thread; the hand-over is a
// mutex held for queue operations only. Errors: values.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "storage/device.hpp"
#include "storage/gop_index.hpp"
#include "storage/record.hpp"
#include "storage/segment_reader.hpp"
#include "storage/stream_io.hpp"

namespace vigil::storage {

// A closed segment as the catalog describes it: enough to read it without the volume's
// allocation table.
struct PlaybackSegment {
  std::uint64_t segment_id = 0;
  std::uint64_t stream_id = 0;                  // the records' stream id
  std::vector<std::uint64_t> extent_offsets{};  // device offsets, by ordinal
  std::uint64_t extent_bytes = 0;
  std::uint64_t end_offset = 0;  // logical end of the data
  std::int64_t end_pts = kNoTimestamp;
  GopIndex gops{};
};

struct PlaybackRange {
  std::int64_t from_pts = 0;
  std::int64_t to_pts = 0;  // exclusive
  bool keyframes_only = false;
  ReadDirection direction = ReadDirection::forward;  // reverse implies keyframes_only
};

// One GOP as read and verified, or a gap where a damaged one was.
struct PlaybackGop {
  std::vector<AlignedBuffer> buffers{};
  std::vector<ScannedRecord> frames{};  // the frames to serve, in serving order; views into buffers
  bool damaged = false;
  const char* damage = "";                // why (a ScanStop name, or what was inconsistent)
  std::int64_t from_pts = 0, to_pts = 0;  // the GOP's time span
  std::size_t bytes = 0;                  // read from the device
};

class PlaybackStream final : public CycleStream {
 public:
  // SEGMENTS in time order. CYCLE_BYTES: the read budget per cycle. ON_READY runs on the IO
  // thread after GOPs were queued (or the stream ended / failed); it must not block.
  PlaybackStream(std::vector<PlaybackSegment> segments, PlaybackRange range, std::size_t cycle_bytes,
                 std::size_t block_bytes, std::function<void()> on_ready = {});

  StreamIo prepare(std::uint64_t cycle) override;
  void finished(std::uint64_t cycle, Result<void> result) override;

  // --- network side ---
  std::shared_ptr<PlaybackGop> pop();
  // Every GOP of the range was read and popped (or the stream failed: see error()).
  bool done() const;
  std::optional<std::error_code> error() const;
  std::size_t gop_total() const noexcept { return units_.size(); }
  std::uint64_t bytes_read() const;

 private:
  struct Unit {
    std::size_t segment = 0, gop = 0;
    bool whole = false;  // keyframes-only: read the whole GOP (the estimate was short)
  };
  struct Reading {
    Unit unit;
    std::shared_ptr<PlaybackGop> gop;
    std::vector<std::pair<std::uint64_t, std::size_t>> pieces;  // (logical offset of buffer start, scan start)
  };
  std::pair<std::uint64_t, std::uint64_t> unit_bytes(const Unit& u) const;  // logical [begin, end)
  std::int64_t gop_end_pts(std::size_t segment, std::size_t gop) const;
  void scan(Reading& r);

  std::vector<PlaybackSegment> segments_;
  PlaybackRange range_;
  std::size_t cycle_bytes_, block_;
  std::function<void()> on_ready_;
  std::vector<Unit> units_;  // in serving order

  mutable std::mutex mu_;
  std::size_t next_unit_ = 0;                       // IO thread
  std::deque<Unit> retry_;                          // IO thread: keyframes read again whole
  std::vector<Reading> reading_;                    // IO thread: this cycle's IO
  std::size_t key_estimate_ = 0;                    // IO thread: bytes to read for a keyframe
  std::deque<std::shared_ptr<PlaybackGop>> ready_;  // guarded by mu_
  std::size_t ready_bytes_ = 0;                     // guarded by mu_
  std::size_t served_ = 0;                          // guarded by mu_: GOPs popped
  std::size_t finished_units_ = 0;                  // guarded by mu_
  std::uint64_t bytes_read_ = 0;                    // guarded by mu_
  std::optional<std::error_code> error_;            // guarded by mu_
};

}  // namespace vigil::storage
