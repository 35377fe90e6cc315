#include "common/media_writer.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/mem.h>
}

#include <cstring>
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
  // H.265 in MP4 (exports, HLS fragments, `vigil play -o x.mp4`) goes in an 'hvc1' sample entry
  // (parameter sets in the hvcC box), not FFmpeg's default 'hev1': Safari and Apple's HLS players
  // refuse 'hev1'. Matroska and MPEG-TS have no sample entry and keep their own tags.
  const std::string format = oc->oformat ? oc->oformat->name : "";
  if (desc->id == AV_CODEC_ID_HEVC && (format == "mp4" || format == "mov")) {
    par->codec_tag = MKTAG('h', 'v', 'c', '1');
  }
  if (!codec.extradata.empty()) {
    par->extradata = static_cast<std::uint8_t*>(av_mallocz(codec.extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!par->extradata) throw std::runtime_error("out of memory");
    std::memcpy(par->extradata, codec.extradata.data(), codec.extradata.size());
    par->extradata_size = static_cast<int>(codec.extradata.size());
  }
}

void write_header(AVFormatContext* oc, const char* movflags) {
  AVDictionary* opts = nullptr;
  if (movflags) av_dict_set(&opts, "movflags", movflags, 0);
  const int err = avformat_write_header(oc, &opts);
  av_dict_free(&opts);
  if (err < 0) throw std::runtime_error("cannot write the output header: " + av_error(err));
}

}  // namespace

struct MediaWriter::Impl {
  AVFormatContext* oc = nullptr;
  bool own_file = false;  // avio_open'ed: closed with avio_closep
  bool memory = false;    // custom AVIOContext writing into OUT
  Bytes out;
  std::size_t pos = 0;  // memory output: where the next write goes (seekable outputs seek back)
  std::int64_t origin_us = 0;
  std::int64_t last_dts = std::numeric_limits<std::int64_t>::min();
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

MediaWriter MediaWriter::to_file(const std::string& file, const std::string& format, const CodecInfo& codec) {
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

MediaWriter MediaWriter::fragmented(const CodecInfo& codec, std::int64_t origin_us) {
  auto impl = std::make_unique<Impl>();
  impl->origin_us = origin_us;
  int err = avformat_alloc_output_context2(&impl->oc, nullptr, "mp4", nullptr);
  if (err < 0 || !impl->oc) throw std::runtime_error("no MP4 muxer: " + av_error(err));
  add_stream(impl->oc, codec);
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

MediaWriter MediaWriter::mp4_in_memory(const CodecInfo& codec, std::size_t frame_count, std::int64_t origin_us) {
  auto impl = std::make_unique<Impl>();
  impl->origin_us = origin_us;
  int err = avformat_alloc_output_context2(&impl->oc, nullptr, "mp4", nullptr);
  if (err < 0 || !impl->oc) throw std::runtime_error("no MP4 muxer: " + av_error(err));
  add_stream(impl->oc, codec);
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
  pkt->stream_index = 0;
  std::int64_t dts = f.dts_us - s.origin_us;
  std::int64_t pts = f.pts_us - s.origin_us;
  if (dts <= s.last_dts) dts = s.last_dts + 1;  // muxers need strictly rising dts
  if (pts < dts) pts = dts;
  s.last_dts = dts;
  pkt->dts = dts;
  pkt->pts = pts;
  pkt->duration = f.duration_us;
  if (f.keyframe) pkt->flags |= AV_PKT_FLAG_KEY;
  av_packet_rescale_ts(pkt, kMicros, s.oc->streams[0]->time_base);
  if (const int err = av_write_frame(s.oc, pkt); err < 0) {
    throw std::runtime_error("writing the output failed: " + av_error(err));
  }
  ++frames_;
}

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
