#pragma once
// Decode times for a camera whose frames are reordered (B-frames). RTP carries presentation times
// only; storage and every muxer need decode times that rise strictly and never pass a frame's own
// presentation time. With a reorder depth D (how many places early, in decode order, a frame can
// come before one it is shown after), frame i's decode time is the (D+1)-th largest presentation
// time among frames 0..i: what libavformat does with its pts buffer. It rises strictly and stays
// at or before frame i's presentation time for every stream that reorders by at most D.
//
// The first D frames have no such time yet: they are held until frame D arrives and then get
// times one step apart before it (the step: the smallest gap between the first D+1 presentation
// times, one frame interval). A frame that comes more than D places early would get a decode time
// after its presentation time: push() refuses it (the stream needs a larger depth) and hands out
// nothing more. D = 0 is a stream in presentation order: decode time = presentation time, and any
// frame before its predecessor is refused.
// Thread: one owner. Errors: values (push's Outcome), never thrown.
#include <cstdint>
#include <deque>
#include <vector>

namespace vigil::client::rtsp {

struct TimedFrame {
  std::int64_t pts = 0, dts = 0;
};

class DecodeTimes {
 public:
  static constexpr int kMaxDepth = 16;  // H.264/H.265 keep at most 16 frames for reordering

  explicit DecodeTimes(int depth);

  enum class Outcome { ok, too_early };
  // Frame PTS (in decode order). ok: READY gets the frames whose decode times are now known (none
  // while the first D are held). too_early: this frame would need a deeper reorder; nothing is
  // added, and every later push is refused too.
  Outcome push(std::int64_t pts, std::vector<TimedFrame>& ready);
  // At the end of the stream: the held frames (fewer than D + 1 arrived), with times one step
  // apart before the earliest of them.
  void flush(std::vector<TimedFrame>& ready);

  int depth() const noexcept { return depth_; }
  // The depth a refused frame needed at least: how many earlier frames it is shown before.
  int needed_depth() const noexcept { return needed_; }

 private:
  void release_held(std::vector<TimedFrame>& ready);

  int depth_;
  int needed_ = 0;
  bool refused_ = false;
  std::vector<std::int64_t> largest_;  // the D+1 largest presentation times so far, ascending
  std::deque<std::int64_t> recent_;    // the last kMaxDepth presentation times (for needed_)
  std::vector<std::int64_t> held_;     // the first D frames' presentation times
  bool started_ = false;               // frame D arrived: times are handed out as frames come
  std::int64_t last_dts_ = 0;
};

}  // namespace vigil::client::rtsp
