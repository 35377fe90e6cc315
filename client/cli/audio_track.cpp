#include "client/cli/audio_track.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
}
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "client/cli/rate_policy.hpp"
#include "common/media_limits.hpp"

namespace vigil::client {

bool recordable_audio_codec(std::string_view codec) {
  return std::find(kAudioCodecs.begin(), kAudioCodecs.end(), codec) != kAudioCodecs.end();
}

AudioTrack::AudioTrack(const AVCodecParameters& par, AVRational time_base, bool live)
    : par_(avcodec_parameters_alloc()), time_base_(time_base), live_(live) {
  if (!par_ || avcodec_parameters_copy(par_, &par) < 0) {
    avcodec_parameters_free(&par_);
    throw std::runtime_error("out of memory");
  }
}

AudioTrack::~AudioTrack() { avcodec_parameters_free(&par_); }

void AudioTrack::push(PacketPtr p) {
  // Any audio packet starts a decodable run: the keyframe logic (GOP index, drops up to the
  // next keyframe) works on audio as it is.
  p->flags |= AV_PKT_FLAG_KEY;
  const auto bytes = static_cast<std::size_t>(p->size);
  std::unique_lock lock(mu_);
  if (!any_) {
    any_ = true;
    if (p->pts != AV_NOPTS_VALUE) first_pts_ = p->pts;
    first_arrival_us_ =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
  }
  const auto room = [&] { return closed_ || ended_ || queue_.empty() || queued_bytes_ + bytes <= kAudioQueueBytes; };
  if (live_) {
    if (!room()) {
      ++dropped_;
      return;
    }
  } else {
    changed_.wait(lock, room);
  }
  if (closed_ || ended_) return;
  if (dropped_ > 0) set_frames_lost_before(*p, std::exchange(dropped_, 0));
  queued_bytes_ += bytes;
  queue_.push_back(std::move(p));
  changed_.notify_all();
}

void AudioTrack::end() {
  {
    std::lock_guard lock(mu_);
    ended_ = true;
  }
  changed_.notify_all();
}

void AudioTrack::interrupt() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  changed_.notify_all();
}

PacketPtr AudioTrack::next() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return closed_ || ended_ || !queue_.empty(); });
  if (closed_ || queue_.empty()) return nullptr;
  auto p = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= static_cast<std::size_t>(p->size);
  changed_.notify_all();  // a file's demuxer waits for room
  return p;
}

std::size_t AudioTrack::ahead_bytes() const {
  std::lock_guard lock(mu_);
  return queued_bytes_;
}

std::optional<std::int64_t> AudioTrack::first_pts() const {
  std::lock_guard lock(mu_);
  return first_pts_;
}

bool AudioTrack::wait_first_packet() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return any_ || closed_ || ended_; });
  return any_ && !closed_;
}

std::optional<std::int64_t> AudioTrack::first_arrival_wall_us() const {
  std::lock_guard lock(mu_);
  return first_arrival_us_;
}

std::string AudioTrack::codec_name() const { return avcodec_get_name(par_->codec_id); }

void AudioTrack::describe(proto::CodecParameters& c) const {
  c.set_codec_name(codec_name());
  c.set_codec_id(par_->codec_id);
  c.set_time_base_num(time_base_.num);
  c.set_time_base_den(time_base_.den);
  c.set_sample_rate(par_->sample_rate);
  c.set_channels(par_->ch_layout.nb_channels);
  if (par_->extradata_size > 0) c.set_extradata(par_->extradata, static_cast<std::size_t>(par_->extradata_size));
  c.set_bit_rate(par_->bit_rate);
}

double AudioTrack::declared_rate_bps() const {
  return declared_audio_rate_bps(codec_name(), static_cast<double>(par_->bit_rate), par_->sample_rate,
                                 par_->ch_layout.nb_channels);
}

}  // namespace vigil::client
