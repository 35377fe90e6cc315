#include "client/cli/rtsp_input.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
}
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace vigil::client {
namespace {

constexpr std::size_t kStartCodeBytes = 4;
constexpr std::int64_t kMaxForwardStepS = 10;  // between two access units

// The parameter-set NAL units (H.264 SPS/PPS, H.265 VPS/SPS/PPS) of an Annex B access unit, in
// Annex B: the extradata of a camera whose SDP does not carry them.
std::vector<std::uint8_t> parameter_sets(rtsp::VideoCodec codec, const std::vector<std::uint8_t>& annexb) {
  std::vector<std::uint8_t> out;
  std::size_t at = 0;
  const auto next_start = [&](std::size_t from) {
    for (std::size_t i = from; i + kStartCodeBytes <= annexb.size(); ++i) {
      if (annexb[i] == 0 && annexb[i + 1] == 0 && annexb[i + 2] == 0 && annexb[i + 3] == 1) return i;
    }
    return annexb.size();
  };
  at = next_start(0);
  while (at < annexb.size()) {
    const std::size_t nal = at + kStartCodeBytes;
    const std::size_t end = next_start(nal);
    if (nal < end) {
      const int type = codec == rtsp::VideoCodec::h264 ? (annexb[nal] & 0x1f) : ((annexb[nal] >> 1) & 0x3f);
      const bool wanted = codec == rtsp::VideoCodec::h264 ? (type == 7 || type == 8) : (type >= 32 && type <= 34);
      if (wanted)
        out.insert(out.end(), annexb.begin() + static_cast<std::ptrdiff_t>(at),
                   annexb.begin() + static_cast<std::ptrdiff_t>(end));
    }
    at = end;
  }
  return out;
}

// The picture size from the parameter sets and one access unit, by libavcodec's parser (no
// decoder: nothing per camera but the parser's few KiB, and only now).
void read_picture_size(AVCodecParameters& par, const std::vector<std::uint8_t>& unit) {
  AVCodecParserContext* parser = av_parser_init(par.codec_id);
  AVCodecContext* context = avcodec_alloc_context3(nullptr);
  if (parser && context) {
    parser->flags |= PARSER_FLAG_COMPLETE_FRAMES;
    std::vector<std::uint8_t> bytes(par.extradata, par.extradata + par.extradata_size);
    bytes.insert(bytes.end(), unit.begin(), unit.end());
    bytes.resize(bytes.size() + AV_INPUT_BUFFER_PADDING_SIZE, 0);
    std::uint8_t* out = nullptr;
    int out_bytes = 0;
    av_parser_parse2(parser, context, &out, &out_bytes, bytes.data(),
                     static_cast<int>(bytes.size() - AV_INPUT_BUFFER_PADDING_SIZE), AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
    par.width = parser->width > 0 ? parser->width : context->width;
    par.height = parser->height > 0 ? parser->height : context->height;
  }
  av_parser_close(parser);
  avcodec_free_context(&context);
}

void free_vector(void* opaque, std::uint8_t*) { delete static_cast<std::vector<std::uint8_t>*>(opaque); }

// A packet owning PAYLOAD (moved, not copied: the vector is freed with the packet).
PacketPtr packet_of(std::vector<std::uint8_t>&& bytes) {
  auto* payload = new std::vector<std::uint8_t>(std::move(bytes));
  const std::size_t size = payload->size();
  payload->resize(size + AV_INPUT_BUFFER_PADDING_SIZE, 0);
  AVBufferRef* buffer = av_buffer_create(payload->data(), payload->size(), free_vector, payload, 0);
  PacketPtr p(av_packet_alloc());
  if (!buffer || !p) {
    if (buffer) {
      av_buffer_unref(&buffer);
    } else {
      delete payload;
    }
    throw std::runtime_error("out of memory");
  }
  p->buf = buffer;
  p->data = buffer->data;
  p->size = static_cast<int>(size);
  return p;
}

// The codec parameters of the camera's audio, as libavformat would give them.
AVCodecParameters* audio_parameters(const rtsp::SdpAudio& audio) {
  AVCodecParameters* par = avcodec_parameters_alloc();
  const AVCodecDescriptor* descriptor = avcodec_descriptor_get_by_name(rtsp::ffmpeg_name(audio.codec));
  if (!par || !descriptor) {
    avcodec_parameters_free(&par);
    throw std::runtime_error("out of memory");
  }
  par->codec_type = AVMEDIA_TYPE_AUDIO;
  par->codec_id = descriptor->id;
  par->sample_rate = audio.clock_rate_hz;
  av_channel_layout_default(&par->ch_layout, audio.channels);
  par->bit_rate = audio.bandwidth_bps;
  if (!audio.config.empty()) {
    par->extradata = static_cast<std::uint8_t*>(av_mallocz(audio.config.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!par->extradata) {
      avcodec_parameters_free(&par);
      throw std::runtime_error("out of memory");
    }
    std::copy(audio.config.begin(), audio.config.end(), par->extradata);
    par->extradata_size = static_cast<int>(audio.config.size());
  }
  return par;
}

}  // namespace

RtspInput::RtspInput(const std::string& url, const std::atomic<bool>& stop, const std::atomic<bool>& interrupted,
                     int reorder_depth, bool with_audio)
    : session_(url, stop, interrupted, std::chrono::seconds(10), with_audio),
      codecpar_(avcodec_parameters_alloc()),
      decode_times_(reorder_depth) {
  if (!codecpar_) throw std::runtime_error("out of memory");
  if (session_.audio()) {
    try {
      audio_codecpar_ = audio_parameters(*session_.audio());
    } catch (...) {
      avcodec_parameters_free(&codecpar_);
      throw;
    }
  }
  const auto& video = session_.video();
  codecpar_->codec_type = AVMEDIA_TYPE_VIDEO;
  codecpar_->codec_id = video.codec == rtsp::VideoCodec::h264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC;
  codecpar_->bit_rate = video.bandwidth_bps;
  std::vector<std::uint8_t> sets = video.parameter_sets;
  // Without parameter sets in the SDP, nothing before the first keyframe can be decoded: wait
  // for it (a GOP at most) and take them from it.
  for (;;) {
    if (!fill()) {
      avcodec_parameters_free(&codecpar_);
      avcodec_parameters_free(&audio_codecpar_);
      throw std::runtime_error("no video from the camera: " + (error_.empty() ? std::string("stopped") : error_));
    }
    if (!sets.empty()) break;
    if (pending_.front().keyframe) {
      sets = parameter_sets(video.codec, pending_.front().annexb);
      break;
    }
    pending_.pop_front();
  }
  codecpar_->extradata = static_cast<std::uint8_t*>(av_mallocz(sets.size() + AV_INPUT_BUFFER_PADDING_SIZE));
  if (!codecpar_->extradata) {
    avcodec_parameters_free(&codecpar_);
    avcodec_parameters_free(&audio_codecpar_);
    throw std::runtime_error("out of memory");
  }
  std::copy(sets.begin(), sets.end(), codecpar_->extradata);
  codecpar_->extradata_size = static_cast<int>(sets.size());
  read_picture_size(*codecpar_, pending_.front().annexb);
}

RtspInput::~RtspInput() {
  avcodec_parameters_free(&codecpar_);
  avcodec_parameters_free(&audio_codecpar_);
}

std::string RtspInput::skipped_audio() const {
  if (session_.skipped_audio().empty()) return {};
  return "audio codec " + session_.skipped_audio() +
         " is not recorded: a camera's audio is read as AAC (RFC 3640 AAC-hbr), PCMU, PCMA or Opus; recording the "
         "video only";
}

void RtspInput::take_audio(std::vector<PacketPtr>& out) {
  audio_read_.clear();
  session_.take_audio(audio_read_);
  for (auto& frame : audio_read_) {
    if (!first_audio_ts_) first_audio_ts_ = frame.timestamp;
    auto p = packet_of(std::move(frame.data));
    p->pts = p->dts = frame.timestamp - *first_audio_ts_;
    p->duration = frame.duration;
    p->flags |= AV_PKT_FLAG_KEY;
    set_frames_lost_before(*p, frame.frames_lost_before);
    out.push_back(std::move(p));
  }
}

bool RtspInput::fill() {
  while (pending_.empty()) {
    read_.clear();
    if (!session_.read(read_)) {
      error_ = session_.error();
      return false;
    }
    for (auto& unit : read_) pending_.push_back(std::move(unit));
  }
  return true;
}

PacketPtr RtspInput::to_packet(rtsp::AccessUnit& unit, std::int64_t pts) {
  // The payload moves into the packet's buffer, not copied: the vector is freed with the packet.
  PacketPtr p = packet_of(std::move(unit.annexb));
  p->pts = pts;
  p->dts = pts;
  if (unit.keyframe) p->flags |= AV_PKT_FLAG_KEY;
  set_frames_lost_before(*p, unit.units_lost_before);
  return p;
}

void RtspInput::hand_out(const std::vector<rtsp::TimedFrame>& timed) {
  for (const auto& t : timed) {
    PacketPtr p = std::move(waiting_.front());
    waiting_.pop_front();
    p->dts = t.dts;
    ready_.push_back(std::move(p));
  }
}

PacketPtr RtspInput::next() {
  while (ready_.empty()) {
    if (stopped_ || !fill()) {
      // The end: frames held for their decode times go out too (nothing received is dropped).
      stopped_ = true;
      timed_.clear();
      decode_times_.flush(timed_);
      hand_out(timed_);
      if (ready_.empty()) return nullptr;
      break;
    }
    auto& unit = pending_.front();
    if (!first_ts_) first_ts_ = unit.timestamp;
    const std::int64_t pts = unit.timestamp - *first_ts_;
    if (pts < max_pts_ - clock_rate_hz() / 2) {
      // Over half a second back is not reordering but the camera's clock starting over (a
      // restarted encoder): a new session starts the recorder's clock over too.
      error_ = "the camera's timestamps went back " + std::to_string((max_pts_ - pts) * 1000 / clock_rate_hz()) + " ms";
      stopped_ = true;
      continue;
    }
    if (pts - max_pts_ > kMaxForwardStepS * clock_rate_hz()) {
      // Over the session's 10 s IO timeout: not a pause of this camera, a clock that started over.
      error_ = "the camera's timestamps jumped ahead " + std::to_string((pts - max_pts_) / clock_rate_hz()) + " s";
      stopped_ = true;
      continue;
    }
    timed_.clear();
    if (decode_times_.push(pts, timed_) == rtsp::DecodeTimes::Outcome::too_early) {
      // Its decode times cannot be told at this depth: the session ends before this frame, and
      // the next connection is read with the depth it needs.
      reordered_ = true;
      error_ = decode_times_.depth() == 0 ? "its frames are reordered (B-frames)"
                                          : "its frames are reordered deeper than " +
                                                std::to_string(decode_times_.depth()) + " frames (B-frames)";
      stopped_ = true;
      continue;
    }
    max_pts_ = std::max(max_pts_, pts);
    waiting_.push_back(to_packet(unit, pts));
    pending_.pop_front();
    hand_out(timed_);
  }
  PacketPtr p = std::move(ready_.front());
  ready_.pop_front();
  return p;
}

}  // namespace vigil::client
