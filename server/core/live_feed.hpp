#pragma once
// Live view (docs/protocol.md, "Live"): the frames a camera is recording right now, fanned out to
// the viewers watching it at the live edge, straight from the recording session — no disk IO, so
// no disk admission, and a viewer is as close to the live edge as the network lets it be (never a
// cycle behind, where the stream's buffer would put it).
// A frame is copied once (into a shared buffer, all viewers read that) and only while somebody
// watches. Each viewer has a bounded queue; one that falls behind by more than its bound loses
// frames up to the next keyframe (counted) instead of slowing the recording or other viewers.
// A viewer starts at the next keyframe.
// Thread: publish()/end() on the recording session's thread; LiveTap::pop() on the viewer's;
// notify callbacks must not block. Errors: none (a lagging viewer is told by dropped()).
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/rate.hpp"
#include "common/track.hpp"
#include "proto/vigil.pb.h"
#include "storage/record.hpp"

namespace vigil::server {

struct LiveFrame {
  storage::RecordHeader header;  // pts/dts in wall-clock microseconds
  std::vector<std::byte> payload;
};

class LiveTap {
 public:
  LiveTap(std::size_t max_bytes, std::function<void()> notify, bool at_keyframe = true)
      : max_bytes_(max_bytes), notify_(std::move(notify)), started_(!at_keyframe) {}
  std::shared_ptr<const LiveFrame> pop();
  // The frame pop() would return, left in the queue; null if none.
  std::shared_ptr<const LiveFrame> peek() const;
  bool ended() const;  // the recording ended and every frame was popped
  std::uint64_t dropped() const;

 private:
  friend class LiveFeed;
  void push(const std::shared_ptr<const LiveFrame>& f);
  void end();

  std::size_t max_bytes_;
  std::function<void()> notify_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const LiveFrame>> queue_;
  std::size_t bytes_ = 0;
  bool started_ = false;   // got its first keyframe
  bool skipping_ = false;  // fell behind: waiting for the next keyframe
  bool ended_ = false;
  std::uint64_t dropped_ = 0;
};

class LiveFeed {
 public:
  LiveFeed(Track track, proto::CodecParameters codec, Rate rate)
      : track_(std::move(track)), codec_(std::move(codec)), rate_(rate) {}
  const Track& track() const noexcept { return track_; }
  const proto::CodecParameters& codec() const noexcept { return codec_; }
  Rate rate() const noexcept { return rate_; }

  // A new viewer; null if the recording already ended. AT_KEYFRAME false: from the very next frame
  // (a recorded playback continuing live has the frames before it).
  std::shared_ptr<LiveTap> subscribe(std::size_t max_bytes, std::function<void()> notify, bool at_keyframe = true);
  // The recording session: a frame was accepted (copied only if somebody watches).
  void publish(const storage::RecordHeader& h, std::span<const std::byte> payload);
  void end();  // the recording ended: viewers drain and finish

 private:
  Track track_;
  proto::CodecParameters codec_;
  Rate rate_;
  std::mutex mu_;
  std::vector<std::weak_ptr<LiveTap>> taps_;
  std::atomic<std::size_t> watchers_{0};
  bool ended_ = false;
};

// The live feed of every track recording now (a camera's main and sub video and its audio are
// feeds of their own): recording registers, live view and live HLS look up. Thread: any.
class LiveFeeds {
 public:
  // FEED is track FEED->track()'s feed from now on.
  void put(const std::shared_ptr<LiveFeed>& feed);
  // Forgets FEED if it is still its track's feed (a newer recording may have replaced it).
  void erase(const std::shared_ptr<LiveFeed>& feed);
  // The live feed of TRACK while it records, or null.
  std::shared_ptr<LiveFeed> find(const Track& track) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::weak_ptr<LiveFeed>> feeds_;  // by Track::label(); guarded by mu_
};

}  // namespace vigil::server
