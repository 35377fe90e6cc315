#pragma once
// `vigil play --audio`: the camera's audio stream played over its own connection beside the
// video's (OpenPlayback.media_kind "audio", the same range and rate), its packets written into
// the same output file in time order: before each video packet, every audio packet up to its
// time. The file starts at the earlier of the video's first packet and the first audio packet
// recorded in the range asked for (an AAC file's priming frame, a camera's sound in the moment
// before its first keyframe): audio recorded in the range is never left out for coming first.
// Thread: the player's. Errors: open() returns null and says why on LOG (no audio recorded there,
// an older vigild); take() stops the feed on an error and says so (the video goes on).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "client/wire/wire_client.hpp"
#include "common/media_writer.hpp"

namespace vigil::client {

class AudioFeed {
 public:
  // VIDEO: the video's open-playback (its camera, range and rate).
  static std::unique_ptr<AudioFeed> open(const std::string& server, const std::string& token,
                                         const proto::OpenPlayback& video, std::ostream& log);

  const media::CodecInfo& codec() const { return codec_; }
  // The recorded time of the first audio packet at or after FROM_US (those before it are dropped);
  // nullopt when the audio ends first. Waits for that packet.
  std::optional<std::int64_t> first_pts_from(std::int64_t from_us);
  // Writes to OUT every audio packet recorded at or before UNTIL_US (a recorded time), each at
  // OUT_TIME(its recorded time); those before FROM_US are left out.
  void write_until(std::int64_t until_us, std::int64_t from_us, media::MediaWriter& out,
                   const std::function<std::int64_t(std::int64_t)>& out_time);
  std::uint64_t packets() const { return packets_; }

 private:
  AudioFeed(std::unique_ptr<WireClient> client, proto::Envelope open, media::CodecInfo codec, std::ostream& log);
  bool next();  // the next audio packet into pending_; false at the end

  std::unique_ptr<WireClient> client_;
  proto::Envelope open_;
  media::CodecInfo codec_;
  std::ostream& log_;
  std::optional<Received> pending_;
  bool ended_ = false;
  std::uint64_t packets_ = 0;
};

}  // namespace vigil::client
