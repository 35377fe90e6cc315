#include "client/cli/input_demuxer.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
}
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <map>
#include <stdexcept>
#include <vector>

#include "common/redact.hpp"

namespace vigil::client {
namespace {

std::string av_error_text(int rc) {
  char err[256];
  av_strerror(rc, err, sizeof err);
  return err;
}

// Cameras of this process whose frames turned out to be reordered (B-frames), with the reorder
// depth their next connection is read with (rtsp::DecodeTimes); past the deepest H.264/H.265
// allow, libavformat reads them.
std::mutex reordered_mu;
std::map<std::string, int> reorder_depths;  // guarded by reordered_mu
// A camera found reordering gets at least this depth: x264's default B-pyramid needs 2, and
// each depth found too shallow costs a reconnect.
constexpr int kFirstReorderDepth = 2;

int reorder_depth_of(const std::string& input) {
  const std::lock_guard lock(reordered_mu);
  const auto it = reorder_depths.find(input);
  return it == reorder_depths.end() ? 0 : it->second;
}

bool buffered_rtsp(const std::string& input) {
  if (!input.starts_with("rtsp://")) return false;
  if (const char* client = std::getenv("VIGIL_RTSP_CLIENT"); client && std::string_view(client) == "libavformat") {
    return false;
  }
  return reorder_depth_of(input) <= rtsp::DecodeTimes::kMaxDepth;
}

}  // namespace

// libavformat polls this while it waits on the network: a stop is not held up by a silent camera.
int InputDemuxer::on_interrupt(void* self) {
  const auto* d = static_cast<const InputDemuxer*>(self);
  return d->stop_.load() || d->interrupted_.load() ? 1 : 0;
}

std::optional<std::int64_t> timestamp_of(const AVPacket& p) {
  if (p.pts != AV_NOPTS_VALUE) return p.pts;
  if (p.dts != AV_NOPTS_VALUE) return p.dts;
  return std::nullopt;
}

InputDemuxer::InputDemuxer(const std::string& input, const std::atomic<bool>& stop, std::ostream& log, bool with_audio)
    : stop_(stop), log_(log), input_(input) {
  live_source_ = input.find("://") != std::string::npos && !input.starts_with("file://");
  if (buffered_rtsp(input)) {
    try {
      rtsp_ = std::make_unique<RtspInput>(input, stop_, interrupted_, reorder_depth_of(input), with_audio);
      codecpar_ = &rtsp_->codecpar();
      time_base_ = AVRational{1, rtsp_->clock_rate_hz()};
      if (!rtsp_->skipped_audio().empty()) log_ << "vigil record: " << rtsp_->skipped_audio() << "\n";
      if (const auto* par = rtsp_->audio_codecpar()) {
        audio_ = std::make_unique<AudioTrack>(*par, AVRational{1, rtsp_->audio_clock_rate_hz()}, true);
      }
      return;
    } catch (const rtsp::UnsupportedStream& e) {
      log_ << "vigil record: " << e.what() << "; reading it with libavformat\n";
    }
  }
  AVFormatContext* raw = avformat_alloc_context();
  if (!raw) throw std::runtime_error("out of memory");
  raw->interrupt_callback = AVIOInterruptCB{on_interrupt, this};
  AVDictionary* opts = nullptr;
  if (input.starts_with("rtsp://")) {
    av_dict_set(&opts, "rtsp_transport", "tcp", 0);
    av_dict_set(&opts, "timeout", "10000000", 0);  // socket IO timeout, microseconds: a vanished camera
    // A camera's SDP usually carries its codec parameters, else its first keyframe does: a small
    // probe (stopping once they are known, no frame-rate probing) keeps start-up fast and what
    // libavformat buffers per camera small (an ingest worker serves many). The time limit is
    // generous for a camera whose stream is just starting.
    av_dict_set(&opts, "probesize", "262144", 0);         // bytes
    av_dict_set(&opts, "analyzeduration", "5000000", 0);  // microseconds
    av_dict_set(&opts, "fpsprobesize", "0", 0);
  }
  const int open_rc = avformat_open_input(&raw, input.c_str(), nullptr, &opts);
  av_dict_free(&opts);
  if (open_rc < 0) throw std::runtime_error("cannot open " + redact_credentials(input) + ": " + av_error_text(open_rc));
  format_.reset(raw);
  if (avformat_find_stream_info(format_.get(), nullptr) < 0) {
    throw std::runtime_error("cannot read stream information from " + redact_credentials(input));
  }
  const int index = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (index < 0) throw std::runtime_error(redact_credentials(input) + " has no video stream");
  video_ = format_->streams[index];
  codecpar_ = video_->codecpar;
  time_base_ = video_->time_base;
  if (with_audio) open_libav_audio(index);
}

// The audio stream that goes with the video (libavformat's best for it), if vigild records its
// codec; anything else is said once and left out.
void InputDemuxer::open_libav_audio(int video_index) {
  const int index = av_find_best_stream(format_.get(), AVMEDIA_TYPE_AUDIO, -1, video_index, nullptr, 0);
  if (index < 0) return;
  const AVStream* stream = format_->streams[index];
  const std::string codec = avcodec_get_name(stream->codecpar->codec_id);
  if (!recordable_audio_codec(codec)) {
    log_ << "vigil record: audio codec " << codec
         << " is not recorded: vigild stores aac, pcm_mulaw, pcm_alaw and opus audio as it is, never transcoded; "
            "recording the video only\n";
    return;
  }
  audio_index_ = index;
  audio_ = std::make_unique<AudioTrack>(*stream->codecpar, stream->time_base, live_source_);
}

void InputDemuxer::interrupt() {
  interrupted_.store(true);
  if (audio_) audio_->end();
}

PacketPtr InputDemuxer::read_rtsp_packet() {
  auto p = rtsp_->next();
  if (audio_) {
    std::vector<PacketPtr> audio;
    rtsp_->take_audio(audio);
    for (auto& a : audio) audio_->push(std::move(a));
  }
  if (p) return p;
  if (!stop_.load() && !interrupted_.load()) {
    log_ << "vigil record: input lost: " << rtsp_->error() << "\n";
    lost_ = true;
    if (rtsp_->reordered()) {
      const int depth = std::max(kFirstReorderDepth, rtsp_->needed_reorder_depth());
      if (depth <= rtsp::DecodeTimes::kMaxDepth) {
        log_ << "vigil record: reading this camera with decode times " << depth
             << " frames behind (B-frames) from its next connection\n";
      } else {
        log_ << "vigil record: reading this camera with libavformat from its next connection\n";
      }
      const std::lock_guard lock(reordered_mu);
      reorder_depths[input_] = depth;
    }
  }
  return nullptr;
}

PacketPtr InputDemuxer::read_libav_packet() {
  for (;;) {
    PacketPtr pkt(av_packet_alloc());
    if (const int rc = av_read_frame(format_.get(), pkt.get()); rc < 0) {
      // The end of a live camera stream is a lost camera, not the end of a recording.
      if ((rc != AVERROR_EOF || live_source_) && !stop_.load() && !interrupted_.load()) {
        log_ << "vigil record: input lost: " << av_error_text(rc) << "\n";
        lost_ = true;
      }
      return nullptr;
    }
    if (pkt->stream_index == video_->index) return pkt;
    if (audio_ && pkt->stream_index == audio_index_) audio_->push(std::move(pkt));
    if (stop_.load() || interrupted_.load()) return nullptr;
  }
}

PacketPtr InputDemuxer::read_packet() {
  if (done_ || stop_.load() || interrupted_.load()) {
    done_ = true;
    if (audio_) audio_->end();
    return nullptr;
  }
  PacketPtr pkt = rtsp_ ? read_rtsp_packet() : read_libav_packet();
  if (!pkt) {
    done_ = true;
    if (audio_) audio_->end();
    return nullptr;
  }
  if (!any_read_) {
    any_read_ = true;
    first_ts_ = timestamp_of(*pkt);
    if (pkt->pts != AV_NOPTS_VALUE) first_pts_ = pkt->pts;
  }
  return pkt;
}

ReadAhead InputDemuxer::read_ahead(double span_s) {
  ReadAhead r;
  std::optional<std::int64_t> first;
  while (r.span_s < span_s) {
    auto p = read_packet();
    if (!p) break;
    if (const auto ts = timestamp_of(*p)) {
      if (!first) first = ts;
      r.span_s = static_cast<double>(*ts - *first) * time_base_s();
    }
    r.bytes += p->size;
    ahead_.push_back(std::move(p));
  }
  return r;
}

std::size_t InputDemuxer::ahead_bytes() const {
  std::size_t bytes = 0;
  for (const auto& p : ahead_) bytes += static_cast<std::size_t>(p->size);
  return bytes;
}

void InputDemuxer::read_ahead_until(const std::function<bool(const AVPacket&)>& enough) {
  for (;;) {
    auto p = read_packet();
    if (!p) break;
    const bool done = enough(*p);
    ahead_.push_back(std::move(p));
    if (done) break;
  }
}

double InputDemuxer::advertised_bps() const {
  // A file's figure is its average over the whole file, which says nothing of the peaks a
  // cycle's buffer must hold (a keyframe is many average frames); its first GOP is read ahead at
  // once instead. Only a live source's advertised rate (its encoder's setting) is evidence.
  if (!live_source_) return 0;
  if (rtsp_) return rtsp_->advertised_bps();
  // RTSP: the SDP's b=AS (kbit/s) lands in the stream's bit_rate; some demuxers give only the whole input's.
  if (video_->codecpar->bit_rate > 0) return static_cast<double>(video_->codecpar->bit_rate);
  if (format_->nb_streams == 1 && format_->bit_rate > 0) return static_cast<double>(format_->bit_rate);
  return 0;
}

PacketPtr InputDemuxer::next() {
  if (ahead_.empty()) return read_packet();
  auto p = std::move(ahead_.front());
  ahead_.pop_front();
  return p;
}

void InputDemuxer::describe(proto::CodecParameters& c) const {
  const AVCodecParameters* par = codecpar_;
  c.set_codec_name(avcodec_get_name(par->codec_id));
  c.set_codec_id(par->codec_id);
  c.set_width(par->width);
  c.set_height(par->height);
  c.set_time_base_num(time_base_.num);
  c.set_time_base_den(time_base_.den);
  if (par->extradata_size > 0) c.set_extradata(par->extradata, static_cast<std::size_t>(par->extradata_size));
  c.set_bit_rate(par->bit_rate);
}

double InputDemuxer::time_base_s() const { return av_q2d(time_base_); }

}  // namespace vigil::client
