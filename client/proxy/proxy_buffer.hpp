#pragma once
// The packets of one shared upstream playback and the rules of who may use them (docs/proxy.md,
// "Shared playbacks"), apart from the network so they are tested without processes:
//  - a segment [t0, t1) is the GOPs whose keyframe is in it, complete once a keyframe at or after
//    t1 has arrived (or the playback ended);
//  - the buffer covers a viewer's segment when it is in the playback's range, not dropped, and
//    at most READ_AHEAD after the newest keyframe; it has *passed* it when the GOPs were dropped;
//  - GOPs more than KEEP_BEHIND behind the furthest segment end asked for (the lead) are dropped,
//    never one a viewer waits for; above MAX_BYTES, older GOPs go up to the lead;
//  - the upstream should pause when the newest keyframe is READ_AHEAD past the lead (or the
//    buffer is over MAX_BYTES), unless a viewer waits for more.
// Thread: one (the proxy's io_context thread). Errors: none.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <vector>

namespace vigil::client {

struct BufferLimits {
  std::int64_t read_ahead_us = 30'000'000;
  std::int64_t keep_behind_us = 30'000'000;
  std::size_t max_bytes = 32u << 20;
};

class PlaybackBuffer {
 public:
  struct Packet {
    std::int64_t pts = 0, dts = 0, duration = 0;  // wall-clock microseconds
    bool keyframe = false;
    std::vector<std::byte> payload;
  };

  PlaybackBuffer(std::int64_t start_us, std::int64_t end_us, BufferLimits limits)
      : start_us_(start_us), end_us_(end_us), limits_(limits), head_pts_(start_us) {}

  // Adds the next packet in decode order (the first kept is a keyframe). True for a keyframe:
  // waiting segments may be complete now.
  bool append(Packet p);
  void mark_ended() { ended_ = true; }
  bool ended() const { return ended_; }

  bool covers(std::int64_t t0, std::int64_t t1) const;
  bool passed(std::int64_t t0, std::int64_t t1) const;
  bool complete(std::int64_t t1) const { return head_pts_ >= t1 || ended_; }

  // A viewer starts / stops waiting for [T0, T1); the lead moves to T1.
  void enter(std::int64_t t0, std::int64_t t1);
  void leave(std::int64_t t0, std::int64_t t1);
  void trim();
  bool should_pause() const;

  // The packets of the GOPs whose keyframe is in [T0, T1), in decode order. Valid until the
  // buffer changes.
  std::vector<const Packet*> pick(std::int64_t t0, std::int64_t t1) const;

  std::size_t bytes() const { return bytes_; }
  std::int64_t head_pts() const { return head_pts_; }
  std::int64_t front_pts() const { return packets_.empty() ? head_pts_ : packets_.front().pts; }

 private:
  std::int64_t start_us_, end_us_;
  BufferLimits limits_;
  std::deque<Packet> packets_;  // decode order; the front is always a keyframe
  std::size_t bytes_ = 0;
  std::int64_t head_pts_;     // the newest keyframe: every GOP before it is complete
  std::int64_t lead_us_ = 0;  // the furthest segment end a viewer asked for
  bool ended_ = false, dropped_any_ = false;
  std::multiset<std::int64_t> waiting_t0_, waiting_t1_;
};

}  // namespace vigil::client
