#include "common/media_writer.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/mem.h>
}

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>
#include <utility>
#include <limits>
#include <stdexcept>

namespace vigil::media {
namespace {

constexpr AVRational kMicros{1, 1'000'000};
constexpr int kIoBufferBytes = 64 * 1024;

std::string av_error(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

// The sample rate and channel count of an AAC AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1):
// what a recording whose catalog keeps neither still says of itself. {0, 0} where it cannot be read.
std::pair<int, int> aac_config(std::string_view asc) {
  constexpr int kRates[] = {96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350};
  std::size_t bit = 0;
  const auto bits = [&](int n) {
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i, ++bit) {
      if (bit / 8 >= asc.size()) return ~0u;
      v = (v << 1) | ((static_cast<unsigned char>(asc[bit / 8]) >> (7 - bit % 8)) & 1u);
    }
    return v;
  };
  if (bits(5) == 31) bits(6);  // an escaped object type
  const auto index = bits(4);
  int rate = 0;
  if (index < std::size(kRates)) {
    rate = kRates[index];
  } else if (index == 15) {
    const auto explicit_rate = bits(24);
    rate = explicit_rate == ~0u ? 0 : static_cast<int>(explicit_rate);
  }
  const auto config = bits(4);
  const int channels = config >= 1 && config <= 6 ? static_cast<int>(config) : config == 7 ? 8 : 0;
  return {rate, channels};
}

// An Opus head (RFC 7845 §5.1) for CHANNELS at 48 kHz, no pre-skip, mapping family 0: what MP4's
// dOps and Matroska's CodecPrivate are written from, and what an RTP camera never sends.
std::string opus_head(int channels) {
  std::string h = "OpusHead";
  h += static_cast<char>(1);                     // version
  h += static_cast<char>(channels);              // output channel count
  h.append(2, '\0');                             // pre-skip, little-endian
  h += std::string{'\x80', '\xbb', '\0', '\0'};  // input sample rate 48000, little-endian
  h.append(2, '\0');                             // output gain
  h += '\0';                                     // channel mapping family 0 (mono, stereo)
  return h;
}

void add_stream(AVFormatContext* oc, const CodecInfo& codec) {
  const AVCodecDescriptor* desc = avcodec_descriptor_get_by_name(codec.codec_name.c_str());
  if (!desc) throw std::runtime_error("unknown codec '" + codec.codec_name + "'");
  AVStream* st = avformat_new_stream(oc, nullptr);
  if (!st) throw std::runtime_error("out of memory");
  st->time_base = kMicros;
  auto* par = st->codecpar;
  par->codec_type = desc->type;
  par->codec_id = desc->id;
  par->width = codec.width;
  par->height = codec.height;
  par->bit_rate = codec.bit_rate;
  if (desc->type == AVMEDIA_TYPE_AUDIO) {
    // What a camera's audio leaves unsaid (the catalog keeps no sample rate or channels) has one
    // answer per codec: G.711 is 8 kHz mono, Opus runs at 48 kHz (RTP's rtpmap says 2 channels),
    // AAC says both in its AudioSpecificConfig.
    const bool g711 = desc->id == AV_CODEC_ID_PCM_MULAW || desc->id == AV_CODEC_ID_PCM_ALAW;
    const auto [asc_rate, asc_channels] =
        desc->id == AV_CODEC_ID_AAC ? aac_config(codec.extradata) : std::pair<int, int>{0, 0};
    par->sample_rate = codec.sample_rate > 0          ? codec.sample_rate
                       : g711                         ? 8000
                       : desc->id == AV_CODEC_ID_OPUS ? 48000
                                                      : asc_rate;
    const int channels = codec.channels > 0             ? codec.channels
                         : desc->id == AV_CODEC_ID_OPUS ? 2
                         : asc_channels > 0             ? asc_channels
                                                        : 1;
    av_channel_layout_default(&par->ch_layout, channels);
    if (g711) {
      par->bits_per_coded_sample = 8;
      par->block_align = par->ch_layout.nb_channels;
    }
    if (desc->id == AV_CODEC_ID_OPUS) par->frame_size = 960;
  }
  // H.265 in MP4 (exports, HLS fragments, `vigil play -o x.mp4`) goes in an 'hvc1' sample entry
  // (parameter sets in the hvcC box), not FFmpeg's default 'hev1': Safari and Apple's HLS players
  // refuse 'hev1'. Matroska and MPEG-TS have no sample entry and keep their own tags.
  const std::string format = oc->oformat ? oc->oformat->name : "";
  if (desc->id == AV_CODEC_ID_HEVC && (format == "mp4" || format == "mov")) {
    par->codec_tag = MKTAG('h', 'v', 'c', '1');
  }
  std::string extradata = codec.extradata;
  if (desc->id == AV_CODEC_ID_OPUS && extradata.empty()) extradata = opus_head(std::min(par->ch_layout.nb_channels, 2));
  if (!extradata.empty()) {
    par->extradata = static_cast<std::uint8_t*>(av_mallocz(extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!par->extradata) throw std::runtime_error("out of memory");
    std::memcpy(par->extradata, extradata.data(), extradata.size());
    par->extradata_size = static_cast<int>(extradata.size());
  }
}

// Adds the audio track (stream 1) where the container takes its codec as it is.
void add_audio_stream(AVFormatContext* oc, const CodecInfo* audio) {
  if (!audio) return;
  const std::string format = oc->oformat->name;
  if (!container_takes_audio(format, audio->codec_name)) {
    throw std::runtime_error(format + " does not take " + audio->codec_name + " audio as it is (never transcoded)");
  }
  add_stream(oc, *audio);
  // Opus in MP4 is experimental in FFmpeg 5.1's mp4 muxer.
  if (audio->codec_name == "opus") oc->strict_std_compliance = FF_COMPLIANCE_EXPERIMENTAL;
}

void write_header(AVFormatContext* oc, const char* movflags) {
  AVDictionary* opts = nullptr;
  if (movflags) av_dict_set(&opts, "movflags", movflags, 0);
  const int err = avformat_write_header(oc, &opts);
  av_dict_free(&opts);
  if (err < 0) throw std::runtime_error("cannot write the output header: " + av_error(err));
}

}  // namespace

bool container_takes_audio(const std::string& format, const std::string& codec) {
  const bool g711 = codec == "pcm_mulaw" || codec == "pcm_alaw";
  if (format == "matroska") return codec == "aac" || codec == "opus" || g711;
  if (format == "mp4") return codec == "aac" || codec == "opus";  // no G.711 sample entry in MP4
  if (format == "mov") return codec == "aac" || g711;             // no Opus in QuickTime
  if (format == "mpegts") return codec == "aac" || codec == "opus";
  return false;
}

struct MediaWriter::Impl {
  AVFormatContext* oc = nullptr;
  bool own_file = false;  // avio_open'ed: closed with avio_closep
  bool memory = false;    // custom AVIOContext writing into OUT
  Bytes out;
  std::size_t pos = 0;  // memory output: where the next write goes (seekable outputs seek back)
  std::int64_t origin_us = 0;
  std::int64_t last_dts[2] = {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::min()};
  bool finished = false;

  ~Impl() {
    if (!oc) return;
    if (memory && oc->pb) {
      av_freep(&oc->pb->buffer);
      avio_context_free(&oc->pb);
    } else if (own_file && oc->pb) {
      avio_closep(&oc->pb);
    }
    avformat_free_context(oc);
  }

  static int write_packet(void* opaque, std::uint8_t* buf, int size) {  // FFmpeg 5.1: not const
    auto* self = static_cast<Impl*>(opaque);
    const auto n = static_cast<std::size_t>(size);
    if (self->out.size() < self->pos + n) self->out.resize(self->pos + n);
    std::memcpy(self->out.data() + self->pos, buf, n);
    self->pos += n;
    return size;
  }
  static std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
    auto* self = static_cast<Impl*>(opaque);
    if (whence == AVSEEK_SIZE) return static_cast<std::int64_t>(self->out.size());
    std::int64_t base = 0;
    switch (whence & ~AVSEEK_FORCE) {
      case SEEK_SET: base = 0; break;
      case SEEK_CUR: base = static_cast<std::int64_t>(self->pos); break;
      case SEEK_END: base = static_cast<std::int64_t>(self->out.size()); break;
      default: return AVERROR(EINVAL);
    }
    if (base + offset < 0) return AVERROR(EINVAL);
    self->pos = static_cast<std::size_t>(base + offset);
    return base + offset;
  }
  // A custom AVIOContext over OUT; SEEKABLE for the whole-file MP4.
  void open_memory(bool seekable) {
    memory = true;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kIoBufferBytes));
    if (!buffer) throw std::runtime_error("out of memory");
    oc->pb = avio_alloc_context(buffer, kIoBufferBytes, 1, this, nullptr, &Impl::write_packet,
                                seekable ? &Impl::seek : nullptr);
    if (!oc->pb) {
      av_free(buffer);
      throw std::runtime_error("out of memory");
    }
    oc->pb->seekable = seekable ? AVIO_SEEKABLE_NORMAL : 0;
  }
};

MediaWriter::MediaWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MediaWriter::MediaWriter(MediaWriter&&) noexcept = default;
MediaWriter& MediaWriter::operator=(MediaWriter&&) noexcept = default;
MediaWriter::~MediaWriter() = default;

MediaWriter MediaWriter::to_file(const std::string& file, const std::string& format, const CodecInfo& codec,
                                 const CodecInfo* audio) {
  const bool stdout_out = file == "-";
  std::string fmt = format;
  if (fmt.empty() && stdout_out) fmt = "mpegts";
  auto impl = std::make_unique<Impl>();
  int err = avformat_alloc_output_context2(&impl->oc, nullptr, fmt.empty() ? nullptr : fmt.c_str(),
                                           stdout_out ? nullptr : file.c_str());
  if (err < 0 || !impl->oc) {
    throw std::runtime_error("cannot choose an output format for '" + file +
                             "' (mp4, matroska or mpegts): " + av_error(err));
  }
  add_stream(impl->oc, codec);
  add_audio_stream(impl->oc, audio);
  if (!(impl->oc->oformat->flags & AVFMT_NOFILE)) {
    err = avio_open(&impl->oc->pb, stdout_out ? "pipe:1" : file.c_str(), AVIO_FLAG_WRITE);
    if (err < 0) throw std::runtime_error("cannot open '" + file + "' for writing: " + av_error(err));
    impl->own_file = true;
  }
  const std::string name = impl->oc->oformat->name;
  const bool mp4 = name == "mp4" || name == "mov";
  // A file gets its index first (playable while it downloads); a pipe cannot seek back, so it
  // gets fragments.
  write_header(impl->oc, !mp4 ? nullptr : stdout_out ? "frag_keyframe+empty_moov" : "+faststart");
  return MediaWriter(std::move(impl));
}

MediaWriter MediaWriter::fragmented(const CodecInfo& codec, std::int64_t origin_us, const CodecInfo* audio) {
  auto impl = std::make_unique<Impl>();
  impl->origin_us = origin_us;
  int err = avformat_alloc_output_context2(&impl->oc, nullptr, "mp4", nullptr);
  if (err < 0 || !impl->oc) throw std::runtime_error("no MP4 muxer: " + av_error(err));
  add_stream(impl->oc, codec);
  add_audio_stream(impl->oc, audio);
  impl->open_memory(false);
  // empty_moov: the init segment is ftyp + moov alone; frag_custom: fragments end where we
  // say (segment boundaries are GOP boundaries); default_base_moof: offsets relative to each
  // moof, so a segment stands alone; frag_discont: each writer's first fragment carries its
  // own decode time (tfdt) instead of starting at zero.
  impl->oc->flags |= AVFMT_FLAG_BITEXACT;  // no encoder string: the same frames give the same bytes
  // Timestamps as given (distance from ORIGIN_US), neither shifted to zero nor offset by an edit
  // list: that is what makes tfdt the segment's place on the playlist's timeline.
  impl->oc->avoid_negative_ts = AVFMT_AVOID_NEG_TS_DISABLED;
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "movflags", "empty_moov+frag_custom+default_base_moof+frag_discont", 0);
  av_dict_set(&opts, "use_editlist", "0", 0);
  err = avformat_write_header(impl->oc, &opts);
  av_dict_free(&opts);
  if (err < 0) throw std::runtime_error("cannot write the output header: " + av_error(err));
  return MediaWriter(std::move(impl));
}

MediaWriter MediaWriter::mp4_in_memory(const CodecInfo& codec, std::size_t frame_count, std::int64_t origin_us,
                                       const CodecInfo* audio) {
  auto impl = std::make_unique<Impl>();
  impl->origin_us = origin_us;
  int err = avformat_alloc_output_context2(&impl->oc, nullptr, "mp4", nullptr);
  if (err < 0 || !impl->oc) throw std::runtime_error("no MP4 muxer: " + av_error(err));
  add_stream(impl->oc, codec);
  add_audio_stream(impl->oc, audio);
  impl->open_memory(true);
  impl->oc->flags |= AVFMT_FLAG_BITEXACT;  // the same frames give the same bytes (ETag, Range)
  // The index per frame: stsz 4 B, stts and ctts at most 8 B each, stss 4 B per keyframe,
  // stco 4–8 B per chunk; 24 B per frame plus the fixed boxes is a bound. A clip whose index
  // would not fit fails at finish() rather than producing a file with its index last.
  AVDictionary* opts = nullptr;
  av_dict_set_int(&opts, "moov_size", static_cast<std::int64_t>(24 * frame_count + 16 * 1024), 0);
  err = avformat_write_header(impl->oc, &opts);
  av_dict_free(&opts);
  if (err < 0) throw std::runtime_error("cannot write the output header: " + av_error(err));
  return MediaWriter(std::move(impl));
}

void MediaWriter::write(const Frame& f) {
  auto& s = *impl_;
  if (s.finished) throw std::logic_error("MediaWriter: write after finish");
  AVPacket* pkt = av_packet_alloc();
  if (!pkt) throw std::runtime_error("out of memory");
  std::unique_ptr<AVPacket, void (*)(AVPacket*)> guard(pkt, [](AVPacket* p) { av_packet_free(&p); });
  // Not refcounted: av_write_frame reads the payload where it lies (no copy).
  pkt->data = reinterpret_cast<std::uint8_t*>(const_cast<std::byte*>(f.payload.data()));
  pkt->size = static_cast<int>(f.payload.size());
  const int stream = f.audio ? 1 : 0;
  if (f.audio && !has_audio()) throw std::logic_error("MediaWriter: an audio frame without an audio track");
  pkt->stream_index = stream;
  std::int64_t dts = f.dts_us - s.origin_us;
  std::int64_t pts = f.pts_us - s.origin_us;
  if (dts <= s.last_dts[stream]) dts = s.last_dts[stream] + 1;  // muxers need strictly rising dts
  if (pts < dts) pts = dts;
  s.last_dts[stream] = dts;
  pkt->dts = dts;
  pkt->pts = pts;
  pkt->duration = f.duration_us;
  if (f.keyframe) pkt->flags |= AV_PKT_FLAG_KEY;
  av_packet_rescale_ts(pkt, kMicros, s.oc->streams[stream]->time_base);
  if (const int err = av_write_frame(s.oc, pkt); err < 0) {
    throw std::runtime_error("writing the output failed: " + av_error(err));
  }
  ++frames_;
}

bool MediaWriter::has_audio() const noexcept { return impl_->oc->nb_streams > 1; }

void MediaWriter::flush_fragment() {
  if (const int err = av_write_frame(impl_->oc, nullptr); err < 0) {
    throw std::runtime_error("closing a fragment failed: " + av_error(err));
  }
  avio_flush(impl_->oc->pb);
}

void MediaWriter::finish() {
  auto& s = *impl_;
  if (s.finished) return;
  s.finished = true;
  if (const int err = av_write_trailer(s.oc); err < 0) {
    throw std::runtime_error("finishing the output failed: " + av_error(err));
  }
  if (s.oc->pb) avio_flush(s.oc->pb);
}

Bytes MediaWriter::take_output() {
  if (impl_->oc->pb) avio_flush(impl_->oc->pb);
  Bytes b;
  b.swap(impl_->out);
  impl_->pos = 0;
  return b;
}

}  // namespace vigil::media
