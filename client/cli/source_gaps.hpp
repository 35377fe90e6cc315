#pragma once
// Holes in what a source delivered (docs/protocol.md, "Media loss"): a packet whose timestamp is
// well beyond the end of the packets before it means packets the camera or the network never
// delivered, and the recorder reports that media as a source_loss gap. "Well beyond": more than
// kHoleFrames frame intervals and more than kMinHoleS — an interval is the smallest forward step
// between timestamps seen, or a packet's duration (frames reordered for B-frames step by several
// intervals at a time, so the bound is generous, never a false hole). A step of
// kMaxHoleS or more is a clock jump (vigild re-pins its wall clock there), and a step backwards
// a reordered or restarted clock: neither is a hole.
// Timestamps are the stream's own (pts or dts, its time base). Pure: no IO, no clock.
// Thread: the input's reader. Errors: none.
#include <cstdint>
#include <optional>

namespace vigil::client {

// Frame intervals beyond the expected next frame: a reordered stream without dts (B-frames, pts
// only) steps by up to a mini-GOP at a time, which is never a hole.
inline constexpr double kHoleFrames = 8;
inline constexpr double kMinHoleS = 0.5;   // jitter and short stutters below this are not reported
inline constexpr double kMaxHoleS = 10.0;  // vigild's discontinuity bound: beyond it, a clock jump

struct SourceHole {
  std::int64_t from_ts = 0, to_ts = 0;  // [the end of the last packet delivered, the next packet)
  std::uint64_t missing_frames = 0;     // about how many frame intervals fit in it
};

class SourceGapDetector {
 public:
  explicit SourceGapDetector(double time_base_s) : time_base_s_(time_base_s) {}

  // The next packet delivered, at TS with DURATION (0: unknown). A hole that ends at it, if any.
  std::optional<SourceHole> packet(std::int64_t ts, std::int64_t duration) noexcept;

 private:
  double time_base_s_;
  std::optional<std::int64_t> latest_;  // the latest timestamp delivered
  std::int64_t interval_ = 0;           // the frame interval, in the time base (0: not known yet)
};

}  // namespace vigil::client
