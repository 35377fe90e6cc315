#include "client/cli/audio_feed.hpp"

#include <chrono>

#include "common/media_limits.hpp"

namespace vigil::client {

std::unique_ptr<AudioFeed> AudioFeed::open(const std::string& server, const std::string& token,
                                           const proto::OpenPlayback& video, std::ostream& log) {
  try {
    auto client = std::make_unique<WireClient>(server, std::chrono::seconds(30));
    client->hello("vigil-play", token);
    proto::Envelope open;
    *open.mutable_open_playback() = video;
    open.mutable_open_playback()->set_media_kind("audio");
    client->send(open);
    auto first = client->receive();
    if (first.msg.has_refuse()) {
      log << "vigil play: no audio: " << first.msg.refuse().reason() << "\n";
      return nullptr;
    }
    if (!first.msg.has_playback_started()) {
      log << "vigil play: no audio: unexpected answer from the server\n";
      return nullptr;
    }
    const auto& c = first.msg.playback_started().codec();
    // A vigild without audio playback answers with the video: not what was asked for.
    if (is_video_codec(c.codec_name())) {
      log << "vigil play: no audio: vigild answered with " << c.codec_name() << " (it does not play audio apart)\n";
      return nullptr;
    }
    media::CodecInfo codec{.codec_name = c.codec_name(),
                           .bit_rate = c.bit_rate(),
                           .extradata = c.extradata(),
                           .sample_rate = c.sample_rate(),
                           .channels = c.channels()};
    return std::unique_ptr<AudioFeed>(new AudioFeed(std::move(client), std::move(open), std::move(codec), log));
  } catch (const std::exception& e) {
    log << "vigil play: no audio: " << e.what() << "\n";
    return nullptr;
  }
}

AudioFeed::AudioFeed(std::unique_ptr<WireClient> client, proto::Envelope open, media::CodecInfo codec,
                     std::ostream& log)
    : client_(std::move(client)), open_(std::move(open)), codec_(std::move(codec)), log_(log) {}

bool AudioFeed::next() {
  while (!ended_) {
    Received msg;
    try {
      msg = client_->receive();
    } catch (const std::exception& e) {
      log_ << "vigil play: the audio stopped: " << e.what() << "\n";
      ended_ = true;
      return false;
    }
    if (msg.msg.has_media_packet()) {
      pending_ = std::move(msg);
      return true;
    }
    if (!msg.msg.has_playback_end()) continue;
    const auto& end = msg.msg.playback_end();
    const auto next_start = end.next_start_us();
    if (end.failed() || next_start == 0 || next_start <= open_.open_playback().start_us()) {
      if (end.failed()) log_ << "vigil play: the audio stopped: " << end.reason() << "\n";
      ended_ = true;
      return false;
    }
    // The audio goes on in another part (another volume, a reconnect): open it on this connection.
    open_.mutable_open_playback()->set_start_us(next_start);
    try {
      client_->send(open_);
      auto started = client_->receive();
      if (!started.msg.has_playback_started() ||
          started.msg.playback_started().codec().codec_name() != codec_.codec_name) {
        log_ << "vigil play: the audio stops at its next part (not played, or another codec)\n";
        ended_ = true;
        return false;
      }
    } catch (const std::exception& e) {
      log_ << "vigil play: the audio stopped: " << e.what() << "\n";
      ended_ = true;
      return false;
    }
  }
  return false;
}

std::optional<std::int64_t> AudioFeed::first_pts_from(std::int64_t from_us) {
  for (;;) {
    if (!pending_ && !next()) return std::nullopt;
    const auto& m = pending_->msg.media_packet();
    const std::int64_t pts = m.has_pts() ? m.pts() : m.dts();
    if (pts >= from_us) return pts;
    pending_.reset();
  }
}

void AudioFeed::write_until(std::int64_t until_us, std::int64_t from_us, media::MediaWriter& out,
                            const std::function<std::int64_t(std::int64_t)>& out_time) {
  for (;;) {
    if (!pending_ && !next()) return;
    const auto& m = pending_->msg.media_packet();
    const std::int64_t pts = m.has_pts() ? m.pts() : m.dts();
    if (pts > until_us) return;
    if (pts >= from_us) {
      out.write({.pts_us = out_time(pts),
                 .dts_us = out_time(pts),
                 .duration_us = m.duration(),
                 .keyframe = true,
                 .payload = pending_->payload,
                 .audio = true});
      ++packets_;
    }
    pending_.reset();
  }
}

}  // namespace vigil::client
