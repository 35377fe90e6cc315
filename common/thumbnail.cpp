#include "common/thumbnail.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>
}

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/media_limits.hpp"

namespace vigil::media {
namespace {

// A keyframe larger than this is not decoded (the wire caps a frame at --max-frame-bytes).
constexpr std::size_t kMaxKeyframeBytes = 64u << 20;

std::string av_error(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFree {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
using CodecPtr = std::unique_ptr<AVCodecContext, CodecFree>;
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;

void check(int err, const char* what) {
  if (err < 0) throw std::runtime_error(std::string(what) + ": " + av_error(err));
}

// The decoders a thumbnail may open: by codec id, never by a recorded name (which could name
// any of libavcodec's decoders, each a parser of its own), and only the allow-listed video ones.
AVCodecID decoder_id(const std::string& codec_name) {
  if (codec_name == "h264") return AV_CODEC_ID_H264;
  if (codec_name == "hevc") return AV_CODEC_ID_HEVC;
  throw std::runtime_error("no thumbnail decoder for codec '" + codec_name.substr(0, 32) +
                           "' (video: " + std::string(kVideoCodecs[0]) + ", " + std::string(kVideoCodecs[1]) + ")");
}

FramePtr decode(const CodecInfo& info, std::span<const std::byte> keyframe) {
  // A recorded frame of no bytes: nothing to decode (and no bytes to copy into a packet).
  if (keyframe.empty()) throw std::runtime_error("the keyframe is empty");
  static_assert(kVideoCodecs.size() == 2, "decoder_id names every allow-listed video codec");
  if (info.extradata.size() > kMaxExtradataBytes) throw std::runtime_error("extradata is over the media limits");
  if (keyframe.size() > kMaxKeyframeBytes) throw std::runtime_error("the keyframe is larger than a thumbnail decodes");
  const AVCodec* dec = avcodec_find_decoder(decoder_id(info.codec_name));
  if (!dec) throw std::runtime_error("no decoder for codec '" + info.codec_name + "' in this FFmpeg");
  CodecPtr ctx(avcodec_alloc_context3(dec));
  if (!ctx) throw std::runtime_error("out of memory");
  if (!info.extradata.empty()) {
    ctx->extradata = static_cast<std::uint8_t*>(av_mallocz(info.extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!ctx->extradata) throw std::runtime_error("out of memory");
    std::memcpy(ctx->extradata, info.extradata.data(), info.extradata.size());
    ctx->extradata_size = static_cast<int>(info.extradata.size());
  }
  ctx->thread_count = 1;  // one picture: threads would only add start-up cost
  ctx->thread_type = 0;
  // Whatever the SPS claims, no picture larger than the media limits is allocated.
  ctx->max_pixels = kMaxPicturePixels;
  check(avcodec_open2(ctx.get(), dec, nullptr), "opening the decoder");
  PacketPtr pkt(av_packet_alloc());
  if (!pkt) throw std::runtime_error("out of memory");
  // Decoders read past the end (padding): the payload is copied into a padded packet.
  check(av_new_packet(pkt.get(), static_cast<int>(keyframe.size())), "allocating a packet");
  std::memcpy(pkt->data, keyframe.data(), keyframe.size());
  pkt->flags |= AV_PKT_FLAG_KEY;
  // One packet and a flush: the decoder's work is bounded by the one keyframe it is given.
  check(avcodec_send_packet(ctx.get(), pkt.get()), "decoding the keyframe");
  check(avcodec_send_packet(ctx.get(), nullptr), "flushing the decoder");
  FramePtr frame(av_frame_alloc());
  if (!frame) throw std::runtime_error("out of memory");
  check(avcodec_receive_frame(ctx.get(), frame.get()), "the keyframe did not decode to a picture");
  return frame;
}

}  // namespace

Bytes jpeg_of_keyframe(const CodecInfo& codec, std::span<const std::byte> keyframe, int max_width, int quality) {
  FramePtr src = decode(codec, keyframe);
  int width = src->width, height = src->height;
  if (width <= 0 || height <= 0) throw std::runtime_error("the decoded picture has no size");
  if (width > kMaxPictureDimension || height > kMaxPictureDimension) {
    throw std::runtime_error("the decoded picture is larger than the media limits");
  }
  if (max_width > 0 && width > max_width) {
    height = static_cast<int>(static_cast<long long>(height) * max_width / width);
    width = max_width;
  }
  width = std::max(2, width & ~1);
  height = std::max(2, height & ~1);
  std::unique_ptr<SwsContext, SwsFree> sws(sws_getContext(src->width, src->height,
                                                          static_cast<AVPixelFormat>(src->format), width, height,
                                                          AV_PIX_FMT_YUVJ420P, SWS_BICUBIC, nullptr, nullptr, nullptr));
  if (!sws) throw std::runtime_error("cannot scale this picture format");
  FramePtr dst(av_frame_alloc());
  if (!dst) throw std::runtime_error("out of memory");
  dst->format = AV_PIX_FMT_YUVJ420P;
  dst->width = width;
  dst->height = height;
  check(av_frame_get_buffer(dst.get(), 0), "allocating the picture");
  sws_scale(sws.get(), src->data, src->linesize, 0, src->height, dst->data, dst->linesize);

  const AVCodec* enc = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
  if (!enc) throw std::runtime_error("no MJPEG encoder");
  CodecPtr ctx(avcodec_alloc_context3(enc));
  if (!ctx) throw std::runtime_error("out of memory");
  ctx->width = width;
  ctx->height = height;
  ctx->pix_fmt = AV_PIX_FMT_YUVJ420P;
  ctx->time_base = AVRational{1, 25};
  ctx->flags |= AV_CODEC_FLAG_QSCALE;
  ctx->global_quality = FF_QP2LAMBDA * quality;
  check(avcodec_open2(ctx.get(), enc, nullptr), "opening the JPEG encoder");
  dst->quality = ctx->global_quality;
  dst->pts = 0;
  check(avcodec_send_frame(ctx.get(), dst.get()), "encoding the JPEG");
  check(avcodec_send_frame(ctx.get(), nullptr), "flushing the JPEG encoder");
  PacketPtr out(av_packet_alloc());
  if (!out) throw std::runtime_error("out of memory");
  check(avcodec_receive_packet(ctx.get(), out.get()), "encoding the JPEG");
  const auto* b = reinterpret_cast<const std::byte*>(out->data);
  return Bytes(b, b + out->size);
}

}  // namespace vigil::media
